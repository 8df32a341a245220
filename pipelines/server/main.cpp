// torchinfer-server: one process, N cameras sharing a model, a REST API, a
// dashboard and Prometheus metrics (docs/server.md).
//
// Exit codes: 0 stopped by SIGTERM/SIGINT after draining; 1 cannot start
// (a model does not load, the address is taken) or, at SIGTERM, a camera's
// pipeline that never stopped; 2 bad command line or configuration (the
// message names the field).
#include <glib-unix.h>
#include <gst/gst.h>
#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "app/app_numbers.h"
#include "app/app_options.h"
#include "common/file_check.h"
#include "common/json_file.h"
#include "fleet_endpoints.h"
#include "http_api.h"
#include "server/core/http_limits.h"
#include "server/core/token_file.h"
#include "server_app.h"

namespace app = torchinfer::app;
using namespace torchinfer::server;

namespace {

struct Options {
  std::string config, model, listen = "127.0.0.1:8080", token_file, output_dir;
  int rtsp_port = 8554;
  bool rtsp_port_given = false;  // a taken default port only turns re-streams off
  std::vector<std::string> streams;
  ShardSources shard;  // --shard, --shards, --shard-from-hostname
};

// What GLib cannot check: ranges and the flags that go together.
bool check_args(const Options& o, int shards, bool from_host) {
  if (o.rtsp_port < 0 || o.rtsp_port > 65535) {
    g_printerr("torchinfer-server: error: --rtsp-port %d: give 1 to 65535, or 0 for no re-stream\n",
               o.rtsp_port);
    return false;
  }
  if (shards != G_MININT && (shards < 1 || shards > kMaxShards)) {
    g_printerr("torchinfer-server: error: --shards %d: give the count of shards, 1 to %d\n", shards,
               kMaxShards);
    return false;
  }
  if (shards != G_MININT && !from_host) {
    g_printerr("torchinfer-server: error: --shards N (1 to %d) goes with --shard-from-hostname\n",
               kMaxShards);
    return false;
  }
  if (o.config.empty() == o.model.empty()) {
    g_printerr("torchinfer-server: error: give exactly one of --config FILE and --model FILE\n");
    return false;
  }
  return true;
}

bool parse_args(int argc, char** argv, Options& o) {
  gchar *config = nullptr, *model = nullptr, *listen = nullptr, *token = nullptr, *out = nullptr;
  gchar** streams = nullptr;
  gchar* shard = nullptr;
  gint rtsp_port = G_MININT, shards = G_MININT;  // G_MININT: not given
  gboolean from_host = FALSE;
  GOptionEntry entries[] = {
      {"config", 'c', 0, G_OPTION_ARG_FILENAME, &config,
       "JSON configuration: models, cameras, limits (docs/server.md)", "FILE"},
      {"model", 'm', 0, G_OPTION_ARG_FILENAME, &model,
       "Without --config: the one model (id 'default', batch 4)", "FILE"},
      {"stream", 's', 0, G_OPTION_ARG_STRING_ARRAY, &streams,
       "A camera to start with (repeat; ids cam0, cam1, ...): file:///clip.mkv, "
       "v4l2:///dev/video0, rtsp://host/path",
       "URI"},
      {"listen", 'l', 0, G_OPTION_ARG_STRING, &listen,
       "Address and port of the API (default 127.0.0.1:8080; 0.0.0.0:8080 opens it)", "ADDR:PORT"},
      {"token-file", 't', 0, G_OPTION_ARG_FILENAME, &token,
       "File holding a bearer token required on POST, DELETE and /metrics", "FILE"},
      {"output-dir", 'o', 0, G_OPTION_ARG_FILENAME, &out,
       "Folder of the cameras' JSON lines files (overrides output_dir)", "DIR"},
      {"rtsp-port", 'r', 0, G_OPTION_ARG_INT, &rtsp_port,
       "Port of the cameras' RTSP re-streams (\"restream\": true), on the --listen address "
       "(default 8554, re-streams off with a warning when it is taken; 0: no re-stream)",
       "PORT"},
      {"shard", 0, 0, G_OPTION_ARG_STRING, &shard,
       "Run only the cameras shard K of N owns (0-based; docs/deployment.md)", "K/N"},
      {"shard-from-hostname", 0, 0, G_OPTION_ARG_NONE, &from_host,
       "K from the host name's trailing -K (a StatefulSet pod: torchinfer-3), N from --shards "
       "or the config",
       nullptr},
      {"shards", 0, 0, G_OPTION_ARG_INT, &shards, "N for --shard-from-hostname", "N"},
      {nullptr, 0, 0, G_OPTION_ARG_NONE, nullptr, nullptr, nullptr}};
  const bool ok =
      app::parse_options(&argc, &argv, entries, "- analyse many cameras with one model, REST API",
                         "torchinfer-server: error: ");
  app::take(config, o.config);
  app::take(model, o.model);
  app::take(listen, o.listen);
  app::take(token, o.token_file);
  app::take(out, o.output_dir);
  for (gchar** s = streams; s && *s; ++s) o.streams.push_back(*s);
  g_strfreev(streams);
  // Given empty (a template's unset variable) is not the same as not given.
  o.shard.flag_given = shard != nullptr;
  app::take(shard, o.shard.flag);
  o.shard.from_hostname = from_host;
  o.shard.flag_count = shards == G_MININT ? 0 : shards;
  o.rtsp_port_given = rtsp_port != G_MININT;
  if (o.rtsp_port_given) o.rtsp_port = rtsp_port;
  return ok && check_args(o, shards, from_host);
}

// "ADDR:PORT", "[v6]:PORT" or "PORT".
bool split_listen(const std::string& s, std::string* addr, int* port) {
  std::string p = s;
  *addr = "127.0.0.1";
  const std::size_t colon = s.rfind(':');
  if (colon != std::string::npos) {
    *addr = s.substr(0, colon);
    if (addr->size() > 2 && addr->front() == '[' && addr->back() == ']')
      *addr = addr->substr(1, addr->size() - 2);
    p = s.substr(colon + 1);
  }
  char* end = nullptr;
  const long v = p.empty() ? -1 : std::strtol(p.c_str(), &end, 10);
  if (v < 0 || v > 65535 || *end) {
    g_printerr("torchinfer-server: error: --listen '%s': give ADDR:PORT, e.g. 127.0.0.1:8080\n",
               s.c_str());
    return false;
  }
  *port = static_cast<int>(v);
  return true;
}

struct Run {
  GMainLoop* loop = nullptr;
  ServerApp* app = nullptr;
  FleetEndpoints* fleet = nullptr;
  bool draining = false;
  gint64 drain_deadline_us = 0;
};

// Every API connection and every camera's files and sockets need a
// descriptor; the usual soft limit of 1024 is far below the hard one.
void report_open_files_limit(int max_connections) {
  const OpenFilesLimit lim = raise_open_files_limit();
  if (!lim.error.empty())
    g_printerr("torchinfer-server: warning: cannot raise the open files limit: %s\n",
               lim.error.c_str());
  else if (lim.after != lim.before)
    g_printerr("torchinfer-server: open files limit raised from %llu to %llu (the hard limit)\n",
               static_cast<unsigned long long>(lim.before),
               static_cast<unsigned long long>(lim.after));
  // Cameras, models and libraries hold descriptors too (a few dozen).
  if (lim.error.empty() && lim.after < static_cast<std::uint64_t>(max_connections) + 256)
    g_printerr(
        "torchinfer-server: warning: open files limit %llu is low for max_connections %d: "
        "connections beyond it wait (raise it with `ulimit -Hn` or systemd's LimitNOFILE=)\n",
        static_cast<unsigned long long>(lim.after), max_connections);
}

// Stops every camera; false if that has not finished after `timeout_s`
// (a pipeline stuck in a state change, e.g. an open() that never returns).
// SIGTERM must end the process all the same.
bool stop_within(ServerApp* server, double timeout_s) {
  struct Done {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
  };
  auto done = std::make_shared<Done>();
  std::thread stopper([server, done] {
    server->stop_all();
    std::lock_guard<std::mutex> lock(done->mu);
    done->done = true;
    done->cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(done->mu);
  if (!done->cv.wait_for(lock, std::chrono::duration<double>(timeout_s),
                         [&] { return done->done; })) {
    stopper.detach();
    return false;
  }
  lock.unlock();
  stopper.join();
  return true;
}

gboolean on_drain_tick(gpointer user) {
  auto* run = static_cast<Run*>(user);
  if (run->app->drained() || g_get_monotonic_time() >= run->drain_deadline_us) {
    if (!run->app->drained())
      g_printerr("torchinfer-server: drain timeout; stopping the streams still running\n");
    g_main_loop_quit(run->loop);
    return G_SOURCE_REMOVE;
  }
  return G_SOURCE_CONTINUE;
}

gboolean on_signal(gpointer user) {
  auto* run = static_cast<Run*>(user);
  if (run->draining) {
    g_main_loop_quit(run->loop);  // a second signal: stop now
    return G_SOURCE_CONTINUE;
  }
  run->draining = true;
  run->fleet->set_draining();
  g_printerr("torchinfer-server: draining (EOS to every stream)\n");
  run->drain_deadline_us =
      g_get_monotonic_time() + static_cast<gint64>(run->app->config().drain_timeout_s * 1e6);
  run->app->begin_drain();
  g_timeout_add(20, on_drain_tick, run);
  return G_SOURCE_CONTINUE;
}

}  // namespace

// Everything read before the server starts: the config (or --model and
// --stream), this box's shard and the token; false after saying why.
struct Setup {
  ServerConfig config;
  std::string token;
  ShardSpec shard;
  ShardPlan plan;
  std::vector<std::string> owned;
};

bool load_setup(const Options& opt, Setup& s) {
  try {
    if (!opt.config.empty()) {
      s.config = parse_server_config(
          torchinfer::read_json_file(opt.config, "server config", 1u << 20), opt.config);
    } else {
      s.config.models.push_back({"default", opt.model});
    }
    if (!opt.output_dir.empty()) s.config.output_dir = opt.output_dir;
    for (std::size_t i = 0; i < opt.streams.size(); ++i) {
      const nlohmann::json j = {{"id", "cam" + std::to_string(s.config.streams.size())},
                                {"uri", opt.streams[i]}};
      s.config.streams.push_back(parse_stream_spec(j, s.config.models, s.config.mqtt,
                                                   "--stream " + std::to_string(i + 1), ""));
    }
    s.shard = shard_of_this_box(opt.shard, s.config);
    s.plan = keep_own_streams(s.config, s.shard, &s.owned);
    if (static_cast<int>(s.config.streams.size()) > s.config.max_streams)
      throw torchinfer::Error(
          torchinfer::ErrorKind::kConfigInvalid,
          "more streams than max_streams (" + std::to_string(s.config.max_streams) + ")");
    if (opt.rtsp_port == 0)
      for (std::size_t i = 0; i < s.config.streams.size(); ++i)
        if (s.config.streams[i].restream)
          throw torchinfer::Error(torchinfer::ErrorKind::kConfigInvalid,
                                  opt.config + ": streams[" + std::to_string(i) +
                                      "].restream: the server runs without RTSP (--rtsp-port "
                                      "0); give --rtsp-port PORT");
    if (!opt.token_file.empty())
      s.token = parse_token(torchinfer::read_regular_file(opt.token_file, "token file", 4096),
                            opt.token_file);
  } catch (const std::exception& e) {
    g_printerr("torchinfer-server: error: %s\n", e.what());
    return false;
  }
  return true;
}

// Before the cameras: they mount on it. Without it, a stream asking for a
// re-stream is refused with the reason: at start (false) or at its POST.
bool start_restream(const Options& opt, const ServerConfig& config, const std::string& address,
                    ServerApp& server, std::unique_ptr<RestreamServer>& restream) {
  if (!opt.rtsp_port) return true;
  std::string off;
  if (RestreamServer::elements_installed(&off)) {
    restream = std::make_unique<RestreamServer>();
    if (!restream->listen(address, opt.rtsp_port, &off)) restream.reset();
  }
  if (!restream) {
    std::size_t asked = 0;
    while (asked < config.streams.size() && !config.streams[asked].restream) asked++;
    if (opt.rtsp_port_given || asked < config.streams.size()) {
      g_printerr("torchinfer-server: error: %s%s\n",
                 asked < config.streams.size()
                     ? (opt.config + ": streams[" + std::to_string(asked) + "].restream: ").c_str()
                     : "",
                 off.c_str());
      return false;
    }
    g_printerr("torchinfer-server: warning: RTSP re-streams are off: %s\n", off.c_str());
    server.set_restream(nullptr, "RTSP re-streams are off: " + off);
  } else {
    server.set_restream(restream.get());
  }
  return true;
}

// The HTTP API (with the fleet's probes) on address:port; its base URL, or
// "" after saying why.
std::string start_api(const Setup& setup, const std::string& address, int port, ServerApp* server,
                      std::unique_ptr<FleetEndpoints>& fleet, std::unique_ptr<HttpApi>& http) {
  fleet = std::make_unique<FleetEndpoints>(server, setup.shard, setup.plan, setup.owned);
  http = std::make_unique<HttpApi>(server, setup.token);
  http->set_fleet(fleet.get());
  std::string why;
  const std::string url = http->listen(address, port, &why);
  if (url.empty()) {
    g_printerr("torchinfer-server: error: %s\n", why.c_str());
    return url;
  }
  if (setup.token.empty() && address != "127.0.0.1" && address != "::1")
    g_printerr(
        "torchinfer-server: warning: listening on %s without --token-file: anyone who "
        "reaches this address can add and remove cameras\n",
        address.c_str());
  return url;
}

// Serves until SIGTERM or SIGINT (a drain; a second one stops at once),
// then stops every camera; the process's exit code.
int serve_until_signal(std::unique_ptr<ServerApp>& server, std::unique_ptr<FleetEndpoints>& fleet,
                       std::unique_ptr<HttpApi>& http) {
  Run run;
  run.loop = g_main_loop_new(nullptr, FALSE);
  run.app = server.get();
  run.fleet = fleet.get();
  g_unix_signal_add(SIGTERM, on_signal, &run);
  g_unix_signal_add(SIGINT, on_signal, &run);
  g_main_loop_run(run.loop);
  http.reset();
  fleet.reset();
  if (!stop_within(server.get(), server->config().drain_timeout_s + 5)) {
    g_printerr(
        "torchinfer-server: error: a camera's pipeline did not stop (one of its state changes "
        "never returned: a source or output that blocks); exiting without it\n");
    _exit(1);  // the stuck thread holds locks the destructors would wait on
  }
  // Every pipeline is NULL: outputs are flushed. The cameras' last
  // references end their Aravis connections on the reaper thread, which
  // waits on a camera that stopped answering (GVCP timeouts, seconds).
  if (!server->reaped(2)) {
    g_printerr(
        "torchinfer-server: warning: a camera's connection is still closing (the camera stopped "
        "answering); exiting without waiting for it\n");
    g_printerr("torchinfer-server: stopped\n");
    _exit(0);  // the reaper holds the camera; destructors would wait on it
  }
  server.reset();
  g_main_loop_unref(run.loop);
  g_printerr("torchinfer-server: stopped\n");
  return 0;
}

int main(int argc, char** argv) {
  // Every camera added brings streaming threads, and glibc gives new
  // threads arenas of their own (up to 8 per core) that keep their freed
  // pages: 200 add/remove cycles grew RSS by 19 % with the default, 2 % with
  // two arenas (tests/bench/server_churn.sh, docs/server.md). The
  // environment's MALLOC_ARENA_MAX still wins.
  if (!g_getenv("MALLOC_ARENA_MAX")) mallopt(M_ARENA_MAX, 2);
  Options opt;
  if (!parse_args(argc, argv, opt)) return app::kBadCommandLine;
  gst_init(nullptr, nullptr);

  Setup setup;
  if (!load_setup(opt, setup)) return app::kBadCommandLine;
  ServerConfig& config = setup.config;
  std::string address;
  int port = 0;
  if (!split_listen(opt.listen, &address, &port)) return app::kBadCommandLine;
  report_open_files_limit(config.max_connections);

  auto server = std::make_unique<ServerApp>(config);
  std::string why;
  if (!server->load_models(&why)) {
    g_printerr("torchinfer-server: error: %s\n", why.c_str());
    return 1;
  }
  std::unique_ptr<RestreamServer> restream;
  if (!start_restream(opt, config, address, *server, restream)) return 1;
  std::unique_ptr<FleetEndpoints> fleet;
  std::unique_ptr<HttpApi> http;
  const std::string url = start_api(setup, address, port, server.get(), fleet, http);
  if (url.empty()) return 1;
  server->start_configured_streams();
  if (restream)
    g_printerr("torchinfer-server: re-streams on %s/streams/<id>\n", restream->base_url().c_str());
  if (setup.shard.enabled)
    g_printerr("torchinfer-server: shard %d of %d: %zu of the configured cameras\n",
               setup.shard.index, setup.shard.count, setup.owned.size());
  g_printerr("torchinfer-server: serving %s (%zu streams)\n", url.c_str(), config.streams.size());
  return serve_until_signal(server, fleet, http);
}
