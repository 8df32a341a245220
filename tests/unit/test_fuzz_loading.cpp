// Deterministic fuzzing of everything that reads a user's files before the
// first frame: >= 1000 mutated sidecars through the sidecar parser and >= 200
// mutated model files through the zip check and the engine's load path.
// Every outcome must be success or a torchinfer::Error (no crash, no other
// exception, no hang: all inputs are small and every reader is bounded), and
// no damaged model may load and compute something else.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/aligned_buffer.h"
#include "common/error.h"
#include "common/model_config.h"
#include "common/utf8.h"
#include "engine/engine.h"
#include "engine/zip_check.h"
#include "test_paths.h"
#include "zip_layout.h"

using namespace torchinfer;

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string write_temp(const std::string& name, const std::string& bytes) {
  const std::string path = testing::TempDir() + "fuzz_" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// ---- sidecars ----------------------------------------------------------------

const char* const kFullSidecar = R"({
  "input_width": 64, "input_height": 48, "channel_order": "bgr",
  "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225],
  "task": "detection", "labels": ["bracket", "washer", "scratch"], "top_k": 3,
  "output_activation": "sigmoid", "precision": "int8", "quantization": {"forced": false},
  "input_dtype": "float32", "decoder": "yolov5", "confidence_threshold": 0.25,
  "iou_threshold": 0.45, "max_detections": 100, "_comment": "x"
})";

std::string mutate_sidecar(std::string s, std::mt19937& rng, int kind) {
  auto pick = [&](std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
  };
  switch (kind) {
    case 0: {  // byte flips
      const int n = 1 + static_cast<int>(pick(8));
      for (int i = 0; i < n && !s.empty(); ++i)
        s[pick(s.size())] ^= static_cast<char>(1 << pick(8));
      return s;
    }
    case 1:  // truncation
      return s.substr(0, pick(s.size() + 1));
    case 2: {  // deep nesting at a value position
      const std::size_t levels = std::vector<std::size_t>{63, 64, 65, 1000, 100000}[pick(5)];
      const std::string open = pick(2) ? "[" : "{\"a\":";
      std::string deep;
      for (std::size_t i = 0; i < levels; ++i) deep += open;
      deep += "1";
      for (std::size_t i = 0; i < levels; ++i) deep += open == "[" ? "]" : "}";
      const auto colon = s.find(':', pick(s.size()));
      if (colon == std::string::npos) return "{\"mean\": " + deep + "}";
      const auto end = s.find_first_of(",}", colon);
      return s.substr(0, colon + 1) + deep + (end == std::string::npos ? "" : s.substr(end));
    }
    case 3: {  // huge or odd numbers in place of a value
      static const char* nums[] = {"1e400",
                                   "-1e400",
                                   "1e39",
                                   "-0",
                                   "1e-400",
                                   "18446744073709551616",
                                   "-9223372036854775809",
                                   "99999999999999999999999",
                                   "4294967297",
                                   "2147483648",
                                   "0.0"};
      const auto colon = s.find(':', pick(s.size()));
      if (colon == std::string::npos) return s;
      const auto end = s.find_first_of(",}", colon);
      return s.substr(0, colon + 1) + nums[pick(std::size(nums))] +
             (end == std::string::npos ? "" : s.substr(end));
    }
    case 4: {  // wrong types
      static const char* values[] = {"\"str\"",
                                     "[]",
                                     "{}",
                                     "null",
                                     "true",
                                     "[1, \"a\"]",
                                     "[[1], [2], [3]]",
                                     "{\"forced\": 1}",
                                     "\"../../../etc/passwd\"",
                                     "\"\"",
                                     "[\"a\", null]"};
      const auto colon = s.find(':', pick(s.size()));
      if (colon == std::string::npos) return s;
      const auto end = s.find_first_of(",}", colon);
      return s.substr(0, colon + 1) + values[pick(std::size(values))] +
             (end == std::string::npos ? "" : s.substr(end));
    }
    case 5: {  // bytes that are not UTF-8, inside strings or anywhere
      const int n = 1 + static_cast<int>(pick(4));
      for (int i = 0; i < n; ++i) {
        const auto quote = s.find('"', pick(s.size()));
        const std::size_t at = quote == std::string::npos ? pick(s.size() + 1) : quote + 1;
        s.insert(at, 1, static_cast<char>(0x80 + pick(128)));
      }
      return s;
    }
    default: {  // structural characters inserted
      static const char chars[] = "{}[],:\"\\\n\0";
      const int n = 1 + static_cast<int>(pick(4));
      for (int i = 0; i < n; ++i) s.insert(pick(s.size() + 1), 1, chars[pick(sizeof(chars) - 1)]);
      return s;
    }
  }
}

void check_config(const ModelConfig& c, const std::string& text) {
  EXPECT_TRUE(c.input_width >= 1 && c.input_width <= 8192) << text;
  EXPECT_TRUE(c.input_height >= 1 && c.input_height <= 8192) << text;
  EXPECT_TRUE(c.top_k >= 1 && c.top_k <= 1000) << text;
  for (int i = 0; i < c.channels(); ++i)
    EXPECT_TRUE(std::isfinite(c.alpha[i]) && std::isfinite(c.beta[i])) << text;
  for (const auto& l : c.labels) EXPECT_TRUE(is_valid_utf8(l)) << text;
  if (c.confidence_threshold) {
    EXPECT_TRUE(*c.confidence_threshold >= 0 && *c.confidence_threshold <= 1) << text;
  }
}

// ---- model files ---------------------------------------------------------------

using Entry = test::ZipEntry;

template <class Bytes>
std::vector<Entry> entries_of(const Bytes& z) {
  return test::zip_entries(z);
}

// Content of entry `e` of `z` (laid out as in the original), or "" + false
// if it does not inflate.
bool content_of(const std::string& z, const Entry& e, std::string* out) {
  if (e.method == 0) {
    *out = z.substr(e.data, e.comp);
    return true;
  }
  out->assign(e.uncomp, '\0');
  z_stream zs{};
  inflateInit2(&zs, -MAX_WBITS);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(z.data() + e.data));
  zs.avail_in = static_cast<uInt>(e.comp);
  zs.next_out = reinterpret_cast<Bytef*>(out->data());
  zs.avail_out = static_cast<uInt>(out->size());
  const int rc = inflate(&zs, Z_FINISH);
  const bool ok = rc == Z_STREAM_END && zs.avail_out == 0;
  inflateEnd(&zs);
  return ok;
}

enum class Mutation {
  kTruncate,
  kFlipStored,
  kFlipDeflated,
  kFlipAnywhere,
  kRenameBoth,
  kRenameCentral
};

struct ModelOutcome {
  bool accepted_by_check = false, loaded = false;
};

std::vector<float> run_model(const std::string& path) {
  EngineOptions o;
  o.model_path = path;
  o.input_width = 16;
  o.input_height = 16;
  o.warmup_runs = 1;
  o.threads = 1;
  o.optimize = false;
  o.precision = Precision::kFp32;
  Engine e(o);
  constexpr std::size_t kValues = 16 * 16 * 3;
  AlignedBuffer in(kValues * sizeof(float));
  for (std::size_t i = 0; i < kValues; ++i) in.data<float>()[i] = static_cast<float>(i % 17) / 17.f;
  const auto out = e.run(in.data(), 1);
  const TensorView& v = out->tensors().at(0);
  const float* f = static_cast<const float*>(v.data);
  return std::vector<float>(f, f + v.bytes / sizeof(float));
}

}  // namespace

TEST(FuzzLoading, ThousandsOfMutatedSidecarsEndInSuccessOrError) {
  std::vector<std::string> seeds = {kFullSidecar,
                                    R"({"channel_order": "gray", "scale": 0.0039, "offset": 0})",
                                    read_all(test::model_path("tiny_classifier.json")),
                                    read_all(test::model_path("yolo_candidates.json")),
                                    read_all(test::model_path("tiny_int8.json"))};
  // A labels file beside the sidecars, so "labels": "<file>" resolves.
  write_temp("labels.labels", "a\nb\nc\n");
  seeds.push_back(R"({"task": "classification", "labels": "fuzz_labels.labels", "top_k": 2})");
  std::mt19937 rng(20261130);
  int accepted = 0, rejected = 0;
  const int kCases = 1400;
  for (int i = 0; i < kCases; ++i) {
    const std::string& seed = seeds[i % seeds.size()];
    const std::string text = mutate_sidecar(seed, rng, i % 7);
    try {
      // Every 8th through a file: the reader's own limits too.
      const ModelConfig c = i % 8 == 0
                                ? parse_model_config(write_temp("sidecar.json", text))
                                : parse_model_config_text(text, testing::TempDir() + "fuzz.json");
      check_config(c, text);
      ++accepted;
    } catch (const Error& e) {
      EXPECT_TRUE(is_valid_utf8(e.what())) << e.what();
      EXPECT_LT(std::string(e.what()).size(), 2000u) << e.what();
      ++rejected;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "case " << i << ": not a torchinfer::Error: " << e.what() << "\n" << text;
    }
  }
  EXPECT_EQ(accepted + rejected, kCases);
  // Both outcomes occur: the mutations neither all break nor all miss.
  EXPECT_GT(accepted, 50);
  EXPECT_GT(rejected, 500);
  RecordProperty("sidecars_accepted", accepted);
  RecordProperty("sidecars_rejected", rejected);
  std::printf("sidecars: %d accepted, %d rejected with an Error\n", accepted, rejected);
}

TEST(FuzzLoading, HundredsOfMutatedModelsNeverLoadSilentlyDamaged) {
  // Stored tensors and deflated code: both kinds of entry.
  const std::string original_path = test::model_path("hostile_net.pt");
  const std::string original = read_all(original_path);
  const auto entries = entries_of(original);
  ASSERT_GT(entries.size(), 10u);
  std::vector<const Entry*> stored, deflated;
  for (const auto& e : entries) {
    if (e.comp == 0) continue;
    (e.method == 0 ? stored : deflated).push_back(&e);
  }
  ASSERT_FALSE(stored.empty());
  ASSERT_FALSE(deflated.empty());
  const std::vector<float> expected = run_model(original_path);
  ASSERT_FALSE(expected.empty());

  std::mt19937 rng(424242);
  auto pick = [&](std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
  };
  const std::vector<std::pair<Mutation, int>> plan = {
      {Mutation::kTruncate, 40},     {Mutation::kFlipStored, 50}, {Mutation::kFlipDeflated, 50},
      {Mutation::kFlipAnywhere, 60}, {Mutation::kRenameBoth, 20}, {Mutation::kRenameCentral, 10}};
  int cases = 0, rejected_by_check = 0, rejected_at_load = 0, loaded = 0;
  for (const auto& [mutation, count] : plan) {
    for (int n = 0; n < count; ++n, ++cases) {
      std::string bad = original;
      std::size_t flipped = std::string::npos;
      const Entry* target = nullptr;
      switch (mutation) {
        case Mutation::kTruncate:
          bad.resize(pick(original.size()));
          break;
        case Mutation::kFlipStored:
          target = stored[pick(stored.size())];
          flipped = target->data + pick(target->comp);
          break;
        case Mutation::kFlipDeflated:
          target = deflated[pick(deflated.size())];
          flipped = target->data + pick(target->comp);
          break;
        case Mutation::kFlipAnywhere:
          flipped = pick(original.size());
          break;
        case Mutation::kRenameBoth:
        case Mutation::kRenameCentral: {
          target = &entries[pick(entries.size())];
          const std::size_t at = pick(target->name.size());
          const char c = static_cast<char>('a' + pick(26));
          bad[target->central + 46 + at] = c;
          if (mutation == Mutation::kRenameBoth) bad[target->local + 30 + at] = c;
          break;
        }
      }
      if (flipped != std::string::npos) bad[flipped] ^= static_cast<char>(1 << pick(8));
      SCOPED_TRACE("case " + std::to_string(cases) + " offset " + std::to_string(flipped) +
                   (target ? " entry " + target->name : std::string()));
      const std::string path = write_temp("model.pt", bad);

      try {
        check_torchscript_layout(path, verify_zip_archive(path));
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::kModelInvalid) << e.what();
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
        ++rejected_by_check;
        continue;
      } catch (const std::exception& e) {
        ADD_FAILURE() << "not a torchinfer::Error: " << e.what();
        continue;
      }
      // Accepted by the check. A change in stored data always changes the
      // CRC-32 (it catches every burst of up to 32 bits).
      EXPECT_NE(mutation, Mutation::kFlipStored) << "flipped stored data accepted";
      EXPECT_NE(mutation, Mutation::kTruncate) << "truncated file accepted";
      // Deflate streams may carry bits that no decoder reads (padding after
      // the last block): accepted only if every entry's content is the same.
      for (const Entry& e : entries) {
        std::string before, after;
        ASSERT_TRUE(content_of(original, e, &before));
        if (mutation == Mutation::kFlipDeflated || mutation == Mutation::kFlipAnywhere) {
          EXPECT_TRUE(content_of(bad, e, &after) && after == before) << e.name;
        }
      }
      // Through the engine: loads and computes exactly what the original
      // does, or fails with an Error.
      try {
        EXPECT_EQ(run_model(path), expected);
        ++loaded;
      } catch (const Error& e) {
        ++rejected_at_load;
      } catch (const std::exception& e) {
        ADD_FAILURE() << "not a torchinfer::Error: " << e.what();
      }
    }
  }
  EXPECT_EQ(cases, 230);
  EXPECT_EQ(rejected_by_check + rejected_at_load + loaded, cases);
  EXPECT_GT(rejected_by_check, 150);
  RecordProperty("models_rejected_by_check", rejected_by_check);
  RecordProperty("models_rejected_at_load", rejected_at_load);
  RecordProperty("models_loaded_identical", loaded);
  std::printf("models: %d rejected by the zip check, %d at load, %d loaded identical\n",
              rejected_by_check, rejected_at_load, loaded);
}
