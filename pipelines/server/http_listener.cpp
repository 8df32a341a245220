#include "http_listener.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>

namespace torchinfer::server {

namespace {

const char* reason_phrase(int status) {
  return soup_status_get_phrase(static_cast<guint>(status));
}

std::string address_text(GSocketAddress* a) {
  if (!G_IS_INET_SOCKET_ADDRESS(a)) return "";
  auto* in = G_INET_SOCKET_ADDRESS(a);
  gchar* ip = g_inet_address_to_string(g_inet_socket_address_get_address(in));
  std::string s = std::string(ip) + ":" + std::to_string(g_inet_socket_address_get_port(in));
  g_free(ip);
  return s;
}

// A whole small response written at once on a fresh socket (it fits any
// send buffer), then the connection closed: what the client sent is read
// and dropped first so the close does not reset the connection before the
// client has read the answer.
void write_and_close(GSocket* s, int status, const std::string& json) {
  const std::string body = json + "\n";
  const std::string head = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) +
                           "\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n"
                           "Connection: close\r\nContent-Length: " +
                           std::to_string(body.size()) + "\r\n\r\n";
  const std::string all = head + body;
  g_socket_set_blocking(s, FALSE);
  g_socket_send(s, all.data(), all.size(), nullptr, nullptr);
  char sink[4096];
  while (g_socket_receive(s, sink, sizeof sink, nullptr, nullptr) > 0) {
  }
  g_socket_shutdown(s, FALSE, TRUE, nullptr);
}

}  // namespace

HttpListener::HttpListener(SoupServer* server, int max_connections, double idle_timeout_s)
    : server_(server), book_(max_connections), idle_timeout_s_(idle_timeout_s) {}

HttpListener::~HttpListener() {
  if (resume_) g_source_remove(resume_);
  if (source_) {
    g_source_destroy(source_);
    g_source_unref(source_);
  }
  for (auto& [obj, c] : connections_) {
    g_object_weak_unref(obj, on_gone, &c);
    if (c.timer) g_source_remove(c.timer);
  }
  if (listening_) {
    g_socket_close(listening_, nullptr);
    g_object_unref(listening_);
  }
}

std::string HttpListener::listen(const std::string& address, int port, std::string* why) {
  GInetAddress* inet = g_inet_address_new_from_string(address.c_str());
  if (!inet) {
    *why = "--listen: '" + address + "' is not an IP address (e.g. 127.0.0.1, 0.0.0.0, ::1)";
    return "";
  }
  GSocketAddress* sa = g_inet_socket_address_new(inet, static_cast<guint16>(port));
  GError* err = nullptr;
  listening_ = g_socket_new(g_inet_address_get_family(inet), G_SOCKET_TYPE_STREAM,
                            G_SOCKET_PROTOCOL_TCP, &err);
  g_object_unref(inet);
  bool ok = listening_ != nullptr;
  if (ok) {
    g_socket_set_blocking(listening_, FALSE);
    g_socket_set_listen_backlog(listening_, 128);
    ok = g_socket_bind(listening_, sa, TRUE, &err) && g_socket_listen(listening_, &err);
  }
  g_object_unref(sa);
  if (!ok) {
    *why = std::string("cannot listen on ") + address + ":" + std::to_string(port) + ": " +
           (err ? err->message : "unknown error");
    g_clear_error(&err);
    return "";
  }
  GSocketAddress* bound = g_socket_get_local_address(listening_, nullptr);
  const guint16 bound_port = g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(bound));
  g_object_unref(bound);
  watch();
  const std::string host = address.find(':') != std::string::npos ? "[" + address + "]" : address;
  return "http://" + host + ":" + std::to_string(bound_port) + "/";
}

void HttpListener::watch() {
  source_ = g_socket_create_source(listening_, G_IO_IN, nullptr);
  // A socket source calls a GSocketSourceFunc through the GSourceFunc slot.
  g_source_set_callback(source_,
                        reinterpret_cast<GSourceFunc>(reinterpret_cast<void (*)()>(on_incoming)),
                        this, nullptr);
  g_source_attach(source_, nullptr);
}

gboolean HttpListener::on_incoming(GSocket*, GIOCondition, gpointer user) {
  auto* self = static_cast<HttpListener*>(user);
  // A few per wake-up, so a flood of connections cannot starve the cameras'
  // bus messages on the same loop.
  for (int i = 0; i < 32; ++i) {
    if (!self->accept_one()) break;
  }
  return self->source_ ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

// False when there is nothing more to accept now (or accepting paused).
bool HttpListener::accept_one() {
  GError* err = nullptr;
  GSocket* s = g_socket_accept(listening_, nullptr, &err);
  if (!s) {
    if (!g_error_matches(err, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)) accept_failed(err);
    g_clear_error(&err);
    return false;
  }
  const Admission how = book_.admit();
  if (how != Admission::kRefused) {
    serve(s, how);
  } else {
    write_and_close(s, 503, "{\"error\":\"" + busy_message() + "\"}");
    g_socket_close(s, nullptr);
  }
  g_object_unref(s);
  return true;
}

// The listener pauses instead of spinning on a socket that stays readable;
// connections wait in the backlog meanwhile.
void HttpListener::accept_failed(const GError* err) {
  book_.accept_failed();
  const gint64 now = g_get_monotonic_time();
  if (now - last_log_us_ >= G_USEC_PER_SEC) {
    struct rlimit lim = {};
    getrlimit(RLIMIT_NOFILE, &lim);
    g_printerr(
        "torchinfer-server: warning: cannot accept an API connection: %s (open files limit %llu; "
        "%d connections open; %llu failed accepts so far); accepting again in 100 ms\n",
        err ? err->message : "unknown error", static_cast<unsigned long long>(lim.rlim_cur),
        book_.open(), static_cast<unsigned long long>(book_.accept_errors()));
    last_log_us_ = now;
  }
  g_source_destroy(source_);
  g_source_unref(source_);
  source_ = nullptr;
  resume_ = g_timeout_add(100, on_resume, this);
}

gboolean HttpListener::on_resume(gpointer user) {
  auto* self = static_cast<HttpListener*>(user);
  self->resume_ = 0;
  self->watch();
  return G_SOURCE_REMOVE;
}

std::string HttpListener::busy_message() const {
  return "the server serves max_connections (" + std::to_string(book_.max_connections()) +
         ") connections already; try again shortly";
}

void HttpListener::serve(GSocket* s, Admission how) {
  GSocketConnection* conn = g_socket_connection_factory_create_connection(s);
  GSocketAddress* local = g_socket_get_local_address(s, nullptr);
  GSocketAddress* remote = g_socket_get_remote_address(s, nullptr);
  // Known before libsoup has it: a request already waiting on the socket is
  // read (and its early handler run) inside soup_server_accept_iostream().
  auto* obj = G_OBJECT(conn);
  Connection& c = connections_[obj];
  c.owner = this;
  c.socket = s;
  c.remote = remote ? address_text(remote) : "";
  c.how = how;
  // A probe sends its request at once: a probes-only place is not held for
  // long by a client that sends nothing.
  const double idle_s =
      how == Admission::kProbesOnly ? std::min(idle_timeout_s_, 1.0) : idle_timeout_s_;
  GError* err = nullptr;
  if (local && remote &&
      soup_server_accept_iostream(server_, G_IO_STREAM(conn), local, remote, &err)) {
    c.timer = g_timeout_add(static_cast<guint>(idle_s * 1000), on_idle_timeout, &c);
    // libsoup holds the connection from here; it goes when libsoup is done.
    g_object_weak_ref(obj, on_gone, &c);
  } else {
    g_clear_error(&err);
    connections_.erase(obj);
    book_.closed(how);
  }
  if (local) g_object_unref(local);
  if (remote) g_object_unref(remote);
  g_object_unref(conn);
}

gboolean HttpListener::on_idle_timeout(gpointer user) {
  auto* c = static_cast<Connection*>(user);
  c->timer = 0;
  c->owner->book_.timed_out();
  // libsoup sees the end of the stream and lets the connection go (a
  // moment later); its place is free now.
  g_socket_shutdown(c->socket, TRUE, TRUE, nullptr);
  c->released = true;
  c->owner->book_.closed(c->how);
  return G_SOURCE_REMOVE;
}

void HttpListener::on_gone(gpointer user, GObject* where_the_object_was) {
  auto* c = static_cast<Connection*>(user);
  HttpListener* self = c->owner;

  if (c->timer) g_source_remove(c->timer);
  if (!c->released) self->book_.closed(c->how);
  self->connections_.erase(where_the_object_was);
}

const HttpListener::Connection* HttpListener::find(SoupServerMessage* msg) const {
  const std::string remote = address_text(soup_server_message_get_remote_address(msg));
  if (remote.empty()) return nullptr;
  for (const auto& [obj, c] : connections_)
    if (c.remote == remote) return &c;
  return nullptr;
}

bool HttpListener::probes_only(SoupServerMessage* msg) const {
  const Connection* c = find(msg);
  return c && c->how == Admission::kProbesOnly;
}

bool HttpListener::answer_and_close(SoupServerMessage* msg, int status, const std::string& json) {
  const std::string remote = address_text(soup_server_message_get_remote_address(msg));
  for (auto& [obj, c] : connections_) {
    if (c.remote != remote || remote.empty()) continue;
    // libsoup then reads the end of the stream instead of the body and
    // drops the connection.
    write_and_close(c.socket, status, json);
    g_socket_shutdown(c.socket, TRUE, FALSE, nullptr);
    return true;
  }
  return false;
}

}  // namespace torchinfer::server
