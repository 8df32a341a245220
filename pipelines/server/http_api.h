// The REST API and the dashboard on libsoup 3's SoupServer:
//   GET /streams, POST /streams, GET|DELETE /streams/{id},
//   GET /streams/{id}/snapshot.jpg, GET|PUT /streams/{id}/analytics, GET /models, GET /metrics, GET
//   /healthz, GET / (the dashboard page, embedded in the binary as a GResource),
//   GET /streams/{id}/events, GET /streams/{id}/events/{n}/{snapshot.jpg,
//   crop.jpg,clip.mkv} (evidence).
// With a token, every POST/DELETE and /metrics need "Authorization: Bearer T".
#pragma once

#include <libsoup/soup.h>

#include <memory>
#include <string>
#include <vector>

#include "fleet_endpoints.h"
#include "http_listener.h"
#include "server_app.h"

namespace torchinfer::server {

class HttpApi {
 public:
  HttpApi(ServerApp* app, std::string token);
  ~HttpApi();
  // address "127.0.0.1", "0.0.0.0", "::1", ...; port 0 picks one. Returns the
  // base URL served, or "" with the reason in *why.
  std::string listen(const std::string& address, int port, std::string* why);
  // The probes, GET /shard, the shard check and label; it outlives this.
  void set_fleet(FleetEndpoints* fleet) { fleet_ = fleet; }

 private:
  static void on_early(SoupServer*, SoupServerMessage* msg, const char* path, GHashTable*,
                       gpointer user);
  void refuse_early(SoupServerMessage* msg, int status, const std::string& message);
  static void on_chunk(SoupServerMessage* msg, GBytes* chunk, gpointer user);
  static void on_request(SoupServer*, SoupServerMessage* msg, const char* path, GHashTable*,
                         gpointer user);
  void handle(SoupServerMessage* msg, const std::string& method, const std::string& path);
  // The one-segment resources beside /streams (dashboard, /healthz, the
  // fleet's, /metrics, /models); false when `name` is none of them.
  bool handle_top(SoupServerMessage* msg, const std::string& method, const std::string& name,
                  const std::string& path);
  // GET|POST /streams.
  void handle_streams(SoupServerMessage* msg, const std::string& method, const std::string& path);
  // /streams/{id} and /streams/{id}/{trigger,analytics,snapshot.jpg}.
  void handle_stream(SoupServerMessage* msg, const std::string& method,
                     const std::vector<std::string>& parts, const std::string& path);
  void not_allowed(SoupServerMessage* msg, const std::string& method, const std::string& path,
                   const char* allow);
  void unauthorized(SoupServerMessage* msg);
  // 413 when the body was cut at max_body_bytes (on_chunk); true if so.
  bool refused_body(SoupServerMessage* msg);
  void handle_events(SoupServerMessage* msg, bool get, const std::vector<std::string>& parts,
                     const std::string& path);
  // GET|PUT /streams/{id}/analytics.
  void handle_analytics(SoupServerMessage* msg, const std::string& method, const std::string& id);
  bool authorized(SoupServerMessage* msg) const;
  void reply(SoupServerMessage* msg, const Reply& r);
  void reply_bytes(SoupServerMessage* msg, int status, const char* type, const void* data,
                   std::size_t size);

  ServerApp* app_;
  std::string token_;
  SoupServer* server_;
  std::unique_ptr<HttpListener> listener_;
  FleetEndpoints* fleet_ = nullptr;
};

}  // namespace torchinfer::server
