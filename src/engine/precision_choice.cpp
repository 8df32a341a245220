#include "engine/precision_choice.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"
#include "common/file_check.h"
#include "common/json_file.h"

namespace torchinfer {

namespace {

std::string fmt(double v, const char* spec = "%.2f") {
  char buf[64];
  std::snprintf(buf, sizeof buf, spec, v);
  return buf;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// mkdir -p; false with errno set on failure.
bool make_dirs(const std::string& dir) {
  std::string part;
  std::stringstream ss(dir);
  std::string item;
  if (!dir.empty() && dir[0] == '/') part = "/";
  while (std::getline(ss, item, '/')) {
    if (item.empty()) continue;
    part += item + "/";
    if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  struct stat st {};
  return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

nlohmann::json key_json(const PrecisionKey& k) {
  return {{"model_crc32", k.model_crc32},
          {"model_bytes", k.model_bytes},
          {"cpu_model", k.cpu_model},
          {"threads", k.threads},
          {"batch", k.batch},
          {"torch_version", k.torch_version}};
}

}  // namespace

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

PrecisionDecision decide_precision(const std::vector<double>& fp32_ms,
                                   const std::vector<double>& bf16_ms, double max_abs_diff,
                                   double max_abs_fp32, const PrecisionRule& rule) {
  PrecisionDecision d;
  d.fp32_ms = median_of(fp32_ms);
  d.bf16_ms = median_of(bf16_ms);
  d.rounds = static_cast<int>(std::min(fp32_ms.size(), bf16_ms.size()));
  for (int i = 0; i < d.rounds; ++i)
    if (bf16_ms[i] < fp32_ms[i]) ++d.bf16_wins;
  d.rel_error = max_abs_fp32 > 0 ? max_abs_diff / max_abs_fp32 : max_abs_diff;
  const std::string figures = "fp32 " + fmt(d.fp32_ms) + " ms, bf16 " + fmt(d.bf16_ms) +
                              " ms, bf16 faster in " + std::to_string(d.bf16_wins) + "/" +
                              std::to_string(d.rounds) + " rounds" +
                              // Measured only once bf16 won every round.
                              (d.rounds > 0 && d.bf16_wins == d.rounds
                                   ? ", bf16 error " + fmt(100 * d.rel_error, "%.3g") + " %"
                                   : "");
  auto keep = [&](const std::string& why) {
    d.bf16 = false;
    d.reason = "fp32: " + why + " (" + figures + ")";
    return d;
  };
  // A lost round decides alone, so the caller may stop timing at the first.
  if (fp32_ms.size() != bf16_ms.size()) return keep("unpaired timing rounds");
  if (d.bf16_wins < d.rounds) return keep("bf16 not faster in every round");
  if (d.rounds < rule.min_rounds)
    return keep("fewer than " + std::to_string(rule.min_rounds) + " paired timing rounds");
  if (!std::isfinite(d.rel_error)) return keep("bf16 outputs are not finite");
  if (d.fp32_ms < rule.min_fp32_ms)
    return keep("under " + fmt(rule.min_fp32_ms, "%g") +
                " ms a batch, too fast for bf16 to matter");
  if (d.bf16_ms > (1 - rule.margin) * d.fp32_ms)
    return keep("bf16 not " + fmt(100 * rule.margin, "%g") + " % faster");
  if (d.rel_error > rule.max_rel_error)
    return keep("bf16 error above the " + fmt(100 * rule.max_rel_error, "%g") + " % bound");
  d.bf16 = true;
  d.reason = "bf16: " + fmt(100 * rule.margin, "%g") + " % faster in every round, error within " +
             fmt(100 * rule.max_rel_error, "%g") + " % (" + figures + ")";
  return d;
}

void hash_model_file(const std::string& path, PrecisionKey* key) {
  FileDescriptor fd(open_regular_file(path, "model"));
  uLong crc = crc32(0L, Z_NULL, 0);
  std::uint64_t total = 0;
  std::vector<unsigned char> buf(1 << 20);
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(ErrorKind::kNotFound,
                  "model '" + path + "': read failed (" + std::strerror(errno) + ")");
    }
    if (n == 0) break;
    crc = crc32(crc, buf.data(), static_cast<uInt>(n));
    total += static_cast<std::uint64_t>(n);
  }
  key->model_crc32 = static_cast<std::uint32_t>(crc);
  key->model_bytes = total;
}

std::string cache_file_name(const PrecisionKey& key) {
  // Two independent crc32s over the canonical key text make a 64-bit name.
  const std::string text = key_json(key).dump();
  const auto* p = reinterpret_cast<const Bytef*>(text.data());
  const uLong a = crc32(0L, p, static_cast<uInt>(text.size()));
  const uLong b = adler32(1L, p, static_cast<uInt>(text.size()));
  char buf[40];
  std::snprintf(buf, sizeof buf, "precision-%08lx%08lx.json", static_cast<unsigned long>(a),
                static_cast<unsigned long>(b));
  return buf;
}

std::string precision_cache_dir() {
  const char* v = std::getenv("TORCHINFER_CACHE_DIR");
  if (v && *v) return v;
  v = std::getenv("XDG_CACHE_HOME");
  if (v && *v) return std::string(v) + "/torchinfer";
  v = std::getenv("HOME");
  if (v && *v) return std::string(v) + "/.cache/torchinfer";
  return "";
}

std::optional<CachedDecision> read_cached_decision(const std::string& dir, const PrecisionKey& key,
                                                   std::string* note) {
  if (dir.empty()) return std::nullopt;
  const std::string path = dir + "/" + cache_file_name(key);
  if (::access(path.c_str(), F_OK) != 0) return std::nullopt;
  try {
    // A cache file is a few hundred bytes; anything near this is not ours.
    const nlohmann::json j = read_json_file(path, "precision cache", 64 * 1024, 4);
    if (!j.is_object() || j.value("key", nlohmann::json()) != key_json(key))
      throw Error(ErrorKind::kConfigInvalid, path + ": written for another model or machine");
    const std::string p = j.at("precision").get<std::string>();
    if (p != "fp32" && p != "bf16")
      throw Error(ErrorKind::kConfigInvalid, path + ": unknown precision '" + p + "'");
    CachedDecision c;
    c.path = path;
    c.created = j.at("created").get<std::string>();
    c.decision.bf16 = p == "bf16";
    c.decision.fp32_ms = j.at("fp32_ms").get<double>();
    c.decision.bf16_ms = j.at("bf16_ms").get<double>();
    c.decision.rounds = j.at("rounds").get<int>();
    c.decision.bf16_wins = j.at("bf16_wins").get<int>();
    c.decision.rel_error = j.at("rel_error").get<double>();
    c.decision.reason = j.at("reason").get<std::string>();
    return c;
  } catch (const std::exception& e) {
    if (note) *note = std::string("precision cache ignored, deciding again: ") + e.what();
    return std::nullopt;
  }
}

std::string write_cached_decision(const std::string& dir, const PrecisionKey& key,
                                  const PrecisionDecision& d, std::string* note) {
  auto fail = [&](const std::string& why) {
    if (note)
      *note = "precision cache not written (" + why +
              "): the choice is timed again on every start; set TORCHINFER_CACHE_DIR to a "
              "writable folder";
    return std::string();
  };
  if (dir.empty())
    return fail("no cache folder: HOME, XDG_CACHE_HOME and TORCHINFER_CACHE_DIR unset");
  if (!make_dirs(dir)) return fail(dir + ": " + std::strerror(errno));
  const nlohmann::json j = {{"key", key_json(key)},     {"precision", d.bf16 ? "bf16" : "fp32"},
                            {"created", utc_now()},     {"fp32_ms", d.fp32_ms},
                            {"bf16_ms", d.bf16_ms},     {"rounds", d.rounds},
                            {"bf16_wins", d.bf16_wins}, {"rel_error", d.rel_error},
                            {"reason", d.reason}};
  const std::string path = dir + "/" + cache_file_name(key);
  // Unique per process and call: two elements starting at once, in one
  // process or two, must not share a temp file.
  static std::atomic<unsigned> serial{0};
  const std::string tmp =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(serial++);
  {
    std::ofstream f(tmp, std::ios::trunc);
    if (!f) return fail(tmp + ": " + std::strerror(errno));
    f << j.dump(1) << '\n';
    f.close();
    if (!f) {
      ::unlink(tmp.c_str());
      return fail(tmp + ": write failed");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = path + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return fail(why);
  }
  return path;
}

}  // namespace torchinfer
