// The API's connections, accepted here and handed to SoupServer
// (soup_server_accept_iostream) instead of by libsoup's own listener, which
// removes its accept source for good on the first failed accept: after one
// EMFILE the API never answered again. Here:
// - a failed accept (EMFILE: the open files limit) is counted and logged,
//   and accepting pauses for 100 ms, then resumes;
// - at most max_connections are served at once; past them a few more
//   (ConnectionBook::kProbeReserve) are let in for the probes only, each
//   closed if it sends nothing within a second; one more is answered 503
//   and closed at once (counted);
// - a connection still open idle_timeout_s after it was accepted is closed
//   (counted): each carries one request (every reply closes it), so this
//   is a client that sends nothing, or too slowly, or reads nothing.
// Main loop only.
#pragma once

#include <libsoup/soup.h>

#include <map>
#include <string>

#include "server/core/http_limits.h"

namespace torchinfer::server {

class HttpListener {
 public:
  HttpListener(SoupServer* server, int max_connections, double idle_timeout_s);
  ~HttpListener();
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  // Binds and listens; the base URL ("http://127.0.0.1:8080/"), or "" with
  // the reason in *why.
  std::string listen(const std::string& address, int port, std::string* why);
  const ConnectionBook& book() const { return book_; }

  // Answers the connection `msg` came on with `status` and a JSON body now,
  // without reading its body, and closes it (a request whose body must not
  // be read: declared too large, or of no telling length). False if the
  // connection is not known (then the caller answers the usual way).
  bool answer_and_close(SoupServerMessage* msg, int status, const std::string& json);
  // `msg` came on a connection let in past max_connections, for the probes
  // only (http_limits.h).
  bool probes_only(SoupServerMessage* msg) const;
  // A request other than a probe on such a connection, answered 503.
  void count_refused_request() { book_.refuse_request(); }
  // The 503 body past max_connections.
  std::string busy_message() const;

 private:
  struct Connection {
    HttpListener* owner = nullptr;
    GSocket* socket = nullptr;  // owned by the connection object
    std::string remote;
    guint timer = 0;
    bool released = false;  // its place under max_connections given back
    Admission how = Admission::kServe;
  };
  const Connection* find(SoupServerMessage* msg) const;
  static gboolean on_incoming(GSocket*, GIOCondition, gpointer user);
  static gboolean on_resume(gpointer user);
  static gboolean on_idle_timeout(gpointer user);
  static void on_gone(gpointer user, GObject* where_the_object_was);
  void watch();
  bool accept_one();
  void serve(GSocket* socket, Admission how);
  void accept_failed(const GError* err);

  SoupServer* server_;
  ConnectionBook book_;
  const double idle_timeout_s_;
  GSocket* listening_ = nullptr;
  GSource* source_ = nullptr;
  guint resume_ = 0;
  gint64 last_log_us_ = 0;
  std::map<GObject*, Connection> connections_;
};

}  // namespace torchinfer::server
