#include "http_api.h"

#include <gio/gio.h>

#include "common/file_check.h"
#include "common/utf8.h"

namespace torchinfer::server {

namespace {

const char* kDashboardResource = "/org/torchinfer/server/dashboard.html";

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : path) {
    if (c == '/') {
      if (!cur.empty()) parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) parts.push_back(cur);
  return parts;
}

// The paths a prober asks (docs/server.md "Probes"): answered even past
// max_connections.
bool is_probe(const std::string& path) {
  return path == "/livez" || path == "/readyz" || path == "/startupz" || path == "/healthz";
}

// Compares in time independent of where the strings differ.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() != b.size();
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) diff |= a[i] ^ b[i];
  return diff == 0;
}

}  // namespace

HttpApi::HttpApi(ServerApp* app, std::string token)
    : app_(app),
      token_(std::move(token)),
      server_(soup_server_new("server-header", "torchinfer-server", nullptr)),
      listener_(std::make_unique<HttpListener>(server_, app->config().max_connections,
                                               app->config().idle_timeout_s)) {
  soup_server_add_early_handler(server_, nullptr, on_early, this, nullptr);
  soup_server_add_handler(server_, nullptr, on_request, this, nullptr);
}

HttpApi::~HttpApi() {
  soup_server_disconnect(server_);
  g_object_unref(server_);
}

std::string HttpApi::listen(const std::string& address, int port, std::string* why) {
  return listener_->listen(address, port, why);
}

// Before the body is read: a request declaring a body over the limit, or
// whose length cannot be told (Content-Length headers that disagree), is
// answered and its connection closed without reading the body.
void HttpApi::on_early(SoupServer*, SoupServerMessage* msg, const char* path, GHashTable*,
                       gpointer user) {
  auto* self = static_cast<HttpApi*>(user);
  // Past max_connections only the probes are answered (http_limits.h).
  if (self->listener_->probes_only(msg) && !is_probe(path ? path : "")) {
    self->listener_->count_refused_request();
    self->refuse_early(msg, 503, self->listener_->busy_message());
    return;
  }
  SoupMessageHeaders* h = soup_server_message_get_request_headers(msg);
  std::vector<std::string> lengths;
  SoupMessageHeadersIter it;
  soup_message_headers_iter_init(&it, h);
  const char *name, *value;
  while (soup_message_headers_iter_next(&it, &name, &value))
    if (g_ascii_strcasecmp(name, "Content-Length") == 0) lengths.emplace_back(value);
  long long len = -1;
  std::string why;
  if (!declared_body_length(lengths, &len, &why)) {
    self->refuse_early(msg, 400, "request: " + why);
    return;
  }
  if (len >= 0 && soup_message_headers_get_list(h, "Transfer-Encoding")) {
    self->refuse_early(msg, 400,
                       "request: both Content-Length and Transfer-Encoding; send one of them");
    return;
  }
  const std::size_t max = self->app_->config().max_body_bytes;
  if (len > 0 && static_cast<std::size_t>(len) > max) {
    self->refuse_early(msg, 413,
                       "the body (Content-Length " + std::to_string(len) +
                           ") is larger than max_body_bytes (" + std::to_string(max) + ")");
    return;
  }
  // A chunked body has no declared length: count it as it arrives and stop
  // keeping it once over the limit (on_request then answers 413).
  if (soup_message_headers_get_encoding(h) == SOUP_ENCODING_CHUNKED)
    g_signal_connect(msg, "got-chunk", G_CALLBACK(on_chunk), self);
}

// Answered on the socket now; if the connection is not one of ours, the
// usual reply after libsoup has read the body (and not kept it). Either way
// the request is not handled further.
void HttpApi::refuse_early(SoupServerMessage* msg, int status, const std::string& message) {
  const nlohmann::json body = {{"error", message}};
  g_object_set_data(G_OBJECT(msg), "torchinfer-answered", GINT_TO_POINTER(1));
  if (listener_->answer_and_close(
          msg, status, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))) {
    app_->count_reply(status);
    // For libsoup, should it still read a body already in its buffer.
    soup_server_message_set_status(msg, status, nullptr);
    return;
  }
  soup_message_body_set_accumulate(soup_server_message_get_request_body(msg), FALSE);
  reply(msg, {status, body});
}

void HttpApi::on_chunk(SoupServerMessage* msg, GBytes* chunk, gpointer user) {
  auto* self = static_cast<HttpApi*>(user);
  auto total = GPOINTER_TO_SIZE(g_object_get_data(G_OBJECT(msg), "torchinfer-body-bytes"));
  total += g_bytes_get_size(chunk);
  g_object_set_data(G_OBJECT(msg), "torchinfer-body-bytes", GSIZE_TO_POINTER(total));
  if (total > self->app_->config().max_body_bytes) {
    SoupMessageBody* body = soup_server_message_get_request_body(msg);
    soup_message_body_set_accumulate(body, FALSE);
    soup_message_body_truncate(body);
    g_object_set_data(G_OBJECT(msg), "torchinfer-body-too-large", GINT_TO_POINTER(1));
  }
}

void HttpApi::on_request(SoupServer*, SoupServerMessage* msg, const char* path, GHashTable*,
                         gpointer user) {
  auto* self = static_cast<HttpApi*>(user);
  if (g_object_get_data(G_OBJECT(msg), "torchinfer-answered")) return;
  // Exceptions stop here: libsoup is C.
  try {
    self->handle(msg, soup_server_message_get_method(msg), path ? path : "/");
  } catch (const std::exception& e) {
    self->reply(msg, {500, {{"error", std::string("internal error: ") + e.what()}}});
  }
}

bool HttpApi::authorized(SoupServerMessage* msg) const {
  if (token_.empty()) return true;
  const char* auth =
      soup_message_headers_get_one(soup_server_message_get_request_headers(msg), "Authorization");
  return auth && same_secret(auth, "Bearer " + token_);
}

void HttpApi::reply(SoupServerMessage* msg, const Reply& r) {
  // Replacing bad UTF-8 is the last line: messages quote client text through
  // printable() already, and a reply must never turn into an exception.
  const std::string text =
      r.body.is_null()
          ? ""
          : r.body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  reply_bytes(msg, r.status, "application/json", text.data(), text.size());
}

void HttpApi::reply_bytes(SoupServerMessage* msg, int status, const char* type, const void* data,
                          std::size_t size) {
  soup_server_message_set_status(msg, status, nullptr);
  soup_server_message_set_response(msg, type, SOUP_MEMORY_COPY, static_cast<const char*>(data),
                                   size);
  SoupMessageHeaders* h = soup_server_message_get_response_headers(msg);
  soup_message_headers_replace(h, "Cache-Control", "no-store");
  // libsoup 3.2 (Debian 12) never closes a kept-alive connection that the
  // client closes while idle (fixed upstream in 3.3, commit d20c6601): every
  // client would leak a descriptor. Closing after each reply avoids it; a
  // request costs a loopback connect more.
  soup_message_headers_replace(h, "Connection", "close");
  app_->count_reply(status);
}

namespace {
bool is_get(const std::string& method) {
  return method == "GET" || method == "HEAD";
}
}  // namespace

void HttpApi::not_allowed(SoupServerMessage* msg, const std::string& method,
                          const std::string& path, const char* allow) {
  soup_message_headers_replace(soup_server_message_get_response_headers(msg), "Allow", allow);
  reply(msg, {405,
              {{"error", printable(method, 40) + " is not allowed on " + path +
                             " (allowed: " + allow + ")"}}});
}

void HttpApi::unauthorized(SoupServerMessage* msg) {
  soup_message_headers_replace(soup_server_message_get_response_headers(msg), "WWW-Authenticate",
                               "Bearer");
  reply(msg, {401, {{"error", "a bearer token is required: Authorization: Bearer <token>"}}});
}

bool HttpApi::refused_body(SoupServerMessage* msg) {
  if (!g_object_get_data(G_OBJECT(msg), "torchinfer-body-too-large")) return false;
  reply(msg, {413,
              {{"error", "the body is larger than max_body_bytes (" +
                             std::to_string(app_->config().max_body_bytes) + ")"}}});
  return true;
}

void HttpApi::handle(SoupServerMessage* msg, const std::string& method,
                     const std::string& raw_path) {
  const std::vector<std::string> parts = split_path(raw_path);
  // libsoup hands the path percent-decoded: any bytes at all. Echoed only
  // escaped.
  const std::string path = printable(raw_path, 120);
  if (parts.size() <= 1 && handle_top(msg, method, parts.empty() ? "" : parts[0], path)) return;
  if (parts[0] == "streams" && parts.size() >= 3 && parts[2] == "events")
    return handle_events(msg, is_get(method), parts, path);
  if (parts[0] != "streams" || parts.size() > 3)
    return reply(msg, {404, {{"error", "no such resource: " + path}}});
  if (parts.size() == 1) return handle_streams(msg, method, path);
  handle_stream(msg, method, parts, path);
}

bool HttpApi::handle_top(SoupServerMessage* msg, const std::string& method, const std::string& name,
                         const std::string& path) {
  const bool fleet = fleet_ && FleetEndpoints::serves(name);
  if (name != "" && name != "index.html" && name != "healthz" && !fleet && name != "metrics" &&
      name != "models")
    return false;
  if (!is_get(method)) {
    not_allowed(msg, method, path, "GET");
  } else if (name == "" || name == "index.html") {
    GBytes* page =
        g_resources_lookup_data(kDashboardResource, G_RESOURCE_LOOKUP_FLAGS_NONE, nullptr);
    gsize size = 0;
    const void* data = page ? g_bytes_get_data(page, &size) : nullptr;
    reply_bytes(msg, page ? 200 : 500, "text/html; charset=utf-8", data ? data : "", size);
    if (page) g_bytes_unref(page);
  } else if (name == "healthz") {
    reply(msg, app_->health());
  } else if (fleet) {
    reply(msg, fleet_->get(name));
  } else if (name == "models") {
    reply(msg, app_->list_models());
  } else if (!authorized(msg)) {  // metrics
    unauthorized(msg);
  } else {
    std::string text = app_->metrics() + listener_->book().prometheus();
    if (fleet_) text = fleet_->label_metrics(text);
    reply_bytes(msg, 200, "text/plain; version=0.0.4; charset=utf-8", text.data(), text.size());
  }
  return true;
}

void HttpApi::handle_streams(SoupServerMessage* msg, const std::string& method,
                             const std::string& path) {
  if (is_get(method)) return reply(msg, app_->list_streams());
  if (method != "POST") return not_allowed(msg, method, path, "GET, POST");
  if (!authorized(msg)) return unauthorized(msg);
  if (refused_body(msg)) return;
  SoupMessageBody* body = soup_server_message_get_request_body(msg);
  std::string text = body && body->data ? std::string(body->data, body->length) : "";
  if (fleet_)
    if (std::optional<Reply> refused = fleet_->gate_add(&text)) return reply(msg, *refused);
  Reply r = app_->add_stream(text);
  if (r.status == 201)
    soup_message_headers_replace(soup_server_message_get_response_headers(msg), "Location",
                                 ("/streams/" + r.body.value("id", "")).c_str());
  reply(msg, r);
}

void HttpApi::handle_stream(SoupServerMessage* msg, const std::string& method,
                            const std::vector<std::string>& parts, const std::string& path) {
  const bool get = is_get(method);
  const std::string& id = parts[1];
  if (parts.size() == 3 && parts[2] == "trigger") {
    if (method != "POST") return not_allowed(msg, method, path, "POST");
    if (!authorized(msg)) return unauthorized(msg);
    return reply(msg, app_->trigger(id));
  }
  if (parts.size() == 3 && parts[2] == "analytics") return handle_analytics(msg, method, id);
  if (parts.size() == 3) {
    if (parts[2] != "snapshot.jpg")
      return reply(msg, {404, {{"error", "no such resource: " + path}}});
    if (!get) return not_allowed(msg, method, path, "GET");
    std::vector<std::uint8_t> jpeg;
    std::string why;
    const int status = app_->snapshot(id, &jpeg, &why);
    if (status != 200) return reply(msg, {status, {{"error", why}}});
    return reply_bytes(msg, 200, "image/jpeg", jpeg.data(), jpeg.size());
  }
  if (get) return reply(msg, app_->get_stream(id));
  if (method != "DELETE") return not_allowed(msg, method, path, "GET, DELETE");
  if (!authorized(msg)) return unauthorized(msg);
  reply(msg, app_->remove_stream(id));
}

// GET /streams/{id}/events and /streams/{id}/events/{n}/{file}: the file
// is served from disk as it is (mapped, not copied); it was renamed into
// place whole, and one retention deletes while it is sent stays readable.
void HttpApi::handle_events(SoupServerMessage* msg, bool get, const std::vector<std::string>& parts,
                            const std::string& path) {
  if (parts.size() != 3 && parts.size() != 5)
    return reply(msg, {404, {{"error", "no such resource: " + path}}});
  if (!get) {
    soup_message_headers_replace(soup_server_message_get_response_headers(msg), "Allow", "GET");
    return reply(msg, {405, {{"error", "only GET is allowed on " + path}}});
  }
  if (parts.size() == 3) return reply(msg, app_->list_events(parts[1]));
  std::string file, why;
  const char* type = nullptr;
  const int status = app_->event_file(parts[1], parts[3], parts[4], &file, &type, &why);
  if (status != 200) return reply(msg, {status, {{"error", why}}});
  GMappedFile* mapped = nullptr;
  try {
    FileDescriptor fd(open_regular_file(file, "evidence file"));
    GError* err = nullptr;
    mapped = g_mapped_file_new_from_fd(fd.get(), FALSE, &err);
    if (!mapped) why = file + ": " + (err ? err->message : "cannot be read");
    g_clear_error(&err);
  } catch (const std::exception& e) {
    why = e.what();
  }
  if (!mapped) return reply(msg, {404, {{"error", why}}});
  GBytes* bytes = g_mapped_file_get_bytes(mapped);
  g_mapped_file_unref(mapped);
  soup_server_message_set_status(msg, 200, nullptr);
  SoupMessageHeaders* h = soup_server_message_get_response_headers(msg);
  soup_message_headers_replace(h, "Content-Type", type);
  soup_message_headers_replace(h, "Cache-Control", "no-store");
  soup_message_headers_replace(h, "Connection", "close");  // as reply_bytes() says why
  soup_message_body_append_bytes(soup_server_message_get_response_body(msg), bytes);
  g_bytes_unref(bytes);
  app_->count_reply(200);
}

void HttpApi::handle_analytics(SoupServerMessage* msg, const std::string& method,
                               const std::string& id) {
  if (is_get(method)) return reply(msg, app_->analytics(id));
  if (method != "PUT")
    return not_allowed(msg, method, "/streams/" + printable(id, 64) + "/analytics", "GET, PUT");
  if (!authorized(msg)) return unauthorized(msg);
  if (refused_body(msg)) return;
  SoupMessageBody* body = soup_server_message_get_request_body(msg);
  return reply(msg, app_->set_analytics(
                        id, body && body->data ? std::string(body->data, body->length) : ""));
}

}  // namespace torchinfer::server
