// A blocking HTTP client for the server tests (libsoup 3's SoupSession):
// the REST API, the dashboard and chromedriver's WebDriver API.
#pragma once

#include <gtest/gtest.h>
#include <libsoup/soup.h>

#include <chrono>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

namespace torchinfer::test {

struct HttpReply {
  int status = 0;  // 0: no answer (connection refused, ...)
  std::string body, content_type, error;
  std::map<std::string, std::string> headers;
  nlohmann::json json() const {
    return nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  }
};

class Http {
 public:
  // No proxy lookup: everything here is on 127.0.0.1.
  Http() {
    GProxyResolver* direct = g_simple_proxy_resolver_new(nullptr, nullptr);
    session_ = soup_session_new_with_options("timeout", 60u, "proxy-resolver", direct, nullptr);
    g_object_unref(direct);
  }
  ~Http() { g_object_unref(session_); }

  HttpReply request(const std::string& method, const std::string& url, const std::string& body = "",
                    const std::string& token = "", const char* content_type = "application/json",
                    bool chunked = false) {
    HttpReply r;
    SoupMessage* msg = soup_message_new(method.c_str(), url.c_str());
    if (!msg) {
      r.error = "bad URL " + url;
      return r;
    }
    if (chunked) {
      // A stream of unknown length: libsoup sends it chunked.
      GInputStream* in = g_memory_input_stream_new_from_data(g_memdup2(body.data(), body.size()),
                                                             body.size(), g_free);
      soup_message_set_request_body(msg, content_type, in, -1);
      g_object_unref(in);
    } else if (!body.empty() || method == "POST") {
      GBytes* b = g_bytes_new(body.data(), body.size());
      soup_message_set_request_body_from_bytes(msg, content_type, b);
      g_bytes_unref(b);
    }
    if (!token.empty())
      soup_message_headers_replace(soup_message_get_request_headers(msg), "Authorization",
                                   ("Bearer " + token).c_str());
    GError* err = nullptr;
    GBytes* out = soup_session_send_and_read(session_, msg, nullptr, &err);
    if (out) {
      gsize n = 0;
      const char* d = static_cast<const char*>(g_bytes_get_data(out, &n));
      r.body.assign(d ? d : "", n);
      g_bytes_unref(out);
      r.status = static_cast<int>(soup_message_get_status(msg));
      SoupMessageHeaders* h = soup_message_get_response_headers(msg);
      if (const char* ct = soup_message_headers_get_content_type(h, nullptr)) r.content_type = ct;
      SoupMessageHeadersIter it;
      soup_message_headers_iter_init(&it, h);
      const char *name, *value;
      while (soup_message_headers_iter_next(&it, &name, &value)) r.headers[name] = value;
    } else {
      r.error = err ? err->message : "no reply";
      g_clear_error(&err);
    }
    g_object_unref(msg);
    return r;
  }
  HttpReply get(const std::string& url, const std::string& token = "") {
    return request("GET", url, "", token);
  }

 private:
  SoupSession* session_ = nullptr;
};

// Polls `cond` every 100 ms until it holds or `timeout_s` passes; the
// deadline only bounds a hang, it is not what the test measures.
inline bool eventually(const std::function<bool()>& cond, double timeout_s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return cond();
}

}  // namespace torchinfer::test
