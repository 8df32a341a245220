#include "http_api.h"

#include <gio/gio.h>

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
      server_(soup_server_new("server-header", "torchinfer-server", nullptr)) {
  soup_server_add_early_handler(server_, nullptr, on_early, this, nullptr);
  soup_server_add_handler(server_, nullptr, on_request, this, nullptr);
}

HttpApi::~HttpApi() {
  soup_server_disconnect(server_);
  g_object_unref(server_);
}

std::string HttpApi::listen(const std::string& address, int port, std::string* why) {
  GInetAddress* inet = g_inet_address_new_from_string(address.c_str());
  if (!inet) {
    *why = "--listen: '" + address + "' is not an IP address (e.g. 127.0.0.1, 0.0.0.0, ::1)";
    return "";
  }
  GSocketAddress* sa = g_inet_socket_address_new(inet, static_cast<guint16>(port));
  g_object_unref(inet);
  GError* err = nullptr;
  const bool ok = soup_server_listen(server_, sa, static_cast<SoupServerListenOptions>(0), &err);
  g_object_unref(sa);
  if (!ok) {
    *why = std::string("cannot listen on ") + address + ":" + std::to_string(port) + ": " +
           (err ? err->message : "unknown error");
    g_clear_error(&err);
    return "";
  }
  std::string url;
  GSList* uris = soup_server_get_uris(server_);
  if (uris) {
    char* s = g_uri_to_string(static_cast<GUri*>(uris->data));
    url = s;
    g_free(s);
  }
  g_slist_free_full(uris, reinterpret_cast<GDestroyNotify>(g_uri_unref));
  return url;
}

// Before the body is read: a request declaring a body over the limit is
// answered 413, and its body is read and thrown away as it comes instead of
// being kept in memory (libsoup reads a declared body to the end).
void HttpApi::on_early(SoupServer*, SoupServerMessage* msg, const char*, GHashTable*,
                       gpointer user) {
  auto* self = static_cast<HttpApi*>(user);
  SoupMessageHeaders* h = soup_server_message_get_request_headers(msg);
  const goffset len = soup_message_headers_get_content_length(h);
  const std::size_t max = self->app_->config().max_body_bytes;
  if (len > 0 && static_cast<std::size_t>(len) > max) {
    soup_message_body_set_accumulate(soup_server_message_get_request_body(msg), FALSE);
    self->reply(msg,
                {413,
                 {{"error", "the body (Content-Length " + std::to_string(len) +
                                ") is larger than max_body_bytes (" + std::to_string(max) + ")"}}});
    return;
  }
  // A chunked body has no declared length: count it as it arrives and stop
  // keeping it once over the limit (on_request then answers 413).
  if (soup_message_headers_get_encoding(h) == SOUP_ENCODING_CHUNKED)
    g_signal_connect(msg, "got-chunk", G_CALLBACK(on_chunk), self);
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
  const std::string text = r.body.is_null() ? "" : r.body.dump() + "\n";
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

void HttpApi::handle(SoupServerMessage* msg, const std::string& method, const std::string& path) {
  const std::vector<std::string> parts = split_path(path);
  const bool get = method == "GET" || method == "HEAD";
  auto not_allowed = [&](const char* allow) {
    soup_message_headers_replace(soup_server_message_get_response_headers(msg), "Allow", allow);
    reply(msg,
          {405, {{"error", method + " is not allowed on " + path + " (allowed: " + allow + ")"}}});
  };
  auto unauthorized = [&] {
    soup_message_headers_replace(soup_server_message_get_response_headers(msg), "WWW-Authenticate",
                                 "Bearer");
    reply(msg, {401, {{"error", "a bearer token is required: Authorization: Bearer <token>"}}});
  };

  if (parts.empty() || (parts.size() == 1 && parts[0] == "index.html")) {
    if (!get) return not_allowed("GET");
    GBytes* page =
        g_resources_lookup_data(kDashboardResource, G_RESOURCE_LOOKUP_FLAGS_NONE, nullptr);
    gsize size = 0;
    const void* data = page ? g_bytes_get_data(page, &size) : nullptr;
    reply_bytes(msg, page ? 200 : 500, "text/html; charset=utf-8", data ? data : "", size);
    if (page) g_bytes_unref(page);
    return;
  }
  if (parts.size() == 1 && parts[0] == "healthz") {
    if (!get) return not_allowed("GET");
    return reply(msg, app_->health());
  }
  if (parts.size() == 1 && parts[0] == "metrics") {
    if (!get) return not_allowed("GET");
    if (!authorized(msg)) return unauthorized();
    const std::string text = app_->metrics();
    return reply_bytes(msg, 200, "text/plain; version=0.0.4; charset=utf-8", text.data(),
                       text.size());
  }
  if (parts.size() == 1 && parts[0] == "models") {
    if (!get) return not_allowed("GET");
    return reply(msg, app_->list_models());
  }
  if (parts[0] != "streams" || parts.size() > 3)
    return reply(msg, {404, {{"error", "no such resource: " + path}}});

  if (parts.size() == 1) {
    if (get) return reply(msg, app_->list_streams());
    if (method != "POST") return not_allowed("GET, POST");
    if (!authorized(msg)) return unauthorized();
    if (g_object_get_data(G_OBJECT(msg), "torchinfer-body-too-large"))
      return reply(msg, {413,
                         {{"error", "the body is larger than max_body_bytes (" +
                                        std::to_string(app_->config().max_body_bytes) + ")"}}});
    SoupMessageBody* body = soup_server_message_get_request_body(msg);
    const std::string text = body && body->data ? std::string(body->data, body->length) : "";
    Reply r = app_->add_stream(text);
    if (r.status == 201)
      soup_message_headers_replace(soup_server_message_get_response_headers(msg), "Location",
                                   ("/streams/" + r.body.value("id", "")).c_str());
    return reply(msg, r);
  }
  const std::string& id = parts[1];
  if (parts.size() == 3) {
    if (parts[2] != "snapshot.jpg")
      return reply(msg, {404, {{"error", "no such resource: " + path}}});
    if (!get) return not_allowed("GET");
    std::vector<std::uint8_t> jpeg;
    std::string why;
    const int status = app_->snapshot(id, &jpeg, &why);
    if (status != 200) return reply(msg, {status, {{"error", why}}});
    return reply_bytes(msg, 200, "image/jpeg", jpeg.data(), jpeg.size());
  }
  if (get) return reply(msg, app_->get_stream(id));
  if (method != "DELETE") return not_allowed("GET, DELETE");
  if (!authorized(msg)) return unauthorized();
  return reply(msg, app_->remove_stream(id));
}

}  // namespace torchinfer::server
