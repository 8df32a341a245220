// precision=auto's fp32-or-bf16 rule and the per-machine cache of its
// decisions. Plain data in, plain data out: no libtorch, so the rule is unit
// tested on exact figures, and a cached decision is reused on later starts
// instead of timing again (the same choice every run, and a faster start).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace torchinfer {

// The stated rule (docs/tuning.md "precision"). bf16 is chosen only when all
// hold; anything else keeps fp32.
struct PrecisionRule {
  // Median bf16 <= (1 - margin) x median fp32: below ~15 % the gain does not
  // pay for bf16's ~3 significant digits.
  double margin = 0.15;
  // Below this fp32 median (ms per batch) the difference is noise.
  double min_fp32_ms = 2.0;
  // Largest |bf16 - fp32| over all outputs on the warm-up input, relative to
  // the largest |fp32| output value (absolute where that is 0).
  double max_rel_error = 0.02;
  // At least this many interleaved rounds, and bf16 faster in every one: a
  // few lucky rounds under load must not flip the choice.
  int min_rounds = 5;
};

struct PrecisionDecision {
  bool bf16 = false;
  double fp32_ms = 0, bf16_ms = 0;  // medians
  int rounds = 0, bf16_wins = 0;    // rounds where bf16 was faster
  double rel_error = 0;             // as in PrecisionRule::max_rel_error
  std::string reason;               // why, in words, with the figures
};

double median_of(std::vector<double> v);

// fp32_ms[i] and bf16_ms[i] are round i of an interleaved timing at one batch
// size; max_abs_diff and max_abs_fp32 come from both precisions' outputs on
// the warm-up input. bf16_failed: the bf16 copy could not be made or run.
PrecisionDecision decide_precision(const std::vector<double>& fp32_ms,
                                   const std::vector<double>& bf16_ms, double max_abs_diff,
                                   double max_abs_fp32, const PrecisionRule& rule = {});

// What makes a decision valid: the same model bytes, CPU, threads, batch and
// libtorch give the same answer.
struct PrecisionKey {
  std::uint32_t model_crc32 = 0;
  std::uint64_t model_bytes = 0;
  std::string cpu_model;
  int threads = 0;
  int batch = 0;
  std::string torch_version;
};

// crc32 and size of a file's bytes. Throws Error(kNotFound) if unreadable.
void hash_model_file(const std::string& path, PrecisionKey* key);

// File name (no folder) for a key: "precision-<16 hex digits>.json", the
// digits a hash of every field, so any change is a different file.
std::string cache_file_name(const PrecisionKey& key);

// $TORCHINFER_CACHE_DIR, else $XDG_CACHE_HOME/torchinfer, else
// $HOME/.cache/torchinfer; "" when none is set.
std::string precision_cache_dir();

struct CachedDecision {
  PrecisionDecision decision;
  std::string created;  // UTC, "2026-11-30T10:12:00Z"
  std::string path;
};

// The cached decision for `key` in `dir`, or nullopt when there is none or it
// is unusable; for a corrupt or mismatching file *note says why (the caller
// then decides afresh and overwrites it). Never throws.
std::optional<CachedDecision> read_cached_decision(const std::string& dir, const PrecisionKey& key,
                                                   std::string* note);

// Writes atomically (temp file + rename), creating `dir`. Returns the path,
// or "" with *note saying why when the folder is not writable. Never throws.
std::string write_cached_decision(const std::string& dir, const PrecisionKey& key,
                                  const PrecisionDecision& d, std::string* note);

}  // namespace torchinfer
