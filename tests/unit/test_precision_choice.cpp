#include "engine/precision_choice.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

using namespace torchinfer;

namespace {

// ---- the rule ---------------------------------------------------------------

const std::vector<double> kFp32{10, 10.2, 9.8, 10.1, 9.9};

TEST(PrecisionRule, ClearWinEveryRoundChoosesBf16) {
  const auto d = decide_precision(kFp32, {7, 7.1, 6.9, 7.2, 7}, 0.001, 1.0);
  EXPECT_TRUE(d.bf16) << d.reason;
  EXPECT_DOUBLE_EQ(d.fp32_ms, 10);
  EXPECT_DOUBLE_EQ(d.bf16_ms, 7);
  EXPECT_EQ(d.rounds, 5);
  EXPECT_EQ(d.bf16_wins, 5);
  EXPECT_DOUBLE_EQ(d.rel_error, 0.001);
  EXPECT_EQ(d.reason.rfind("bf16: 15 % faster in every round", 0), 0u) << d.reason;
}

TEST(PrecisionRule, OneLuckyRoundKeepsFp32) {
  // bf16 wins round 3 by a mile (load hit fp32), loses the rest.
  const auto d = decide_precision({10, 10, 30, 10, 10}, {11, 11, 5, 11, 11}, 0, 1.0);
  EXPECT_FALSE(d.bf16);
  EXPECT_EQ(d.bf16_wins, 1);
  EXPECT_NE(d.reason.find("not faster in every round"), std::string::npos) << d.reason;
}

TEST(PrecisionRule, MedianWinButNotEveryRoundKeepsFp32) {
  const auto d = decide_precision(kFp32, {7, 7, 7, 7, 12}, 0, 1.0);
  EXPECT_FALSE(d.bf16);
  EXPECT_EQ(d.bf16_wins, 4);
  EXPECT_NE(d.reason.find("not faster in every round"), std::string::npos) << d.reason;
}

TEST(PrecisionRule, MarginIsInclusiveAt15Percent) {
  EXPECT_TRUE(decide_precision({10, 10, 10, 10, 10}, {8.5, 8.5, 8.5, 8.5, 8.5}, 0, 1).bf16);
  const auto d = decide_precision({10, 10, 10, 10, 10}, {8.6, 8.6, 8.6, 8.6, 8.6}, 0, 1);
  EXPECT_FALSE(d.bf16);
  EXPECT_NE(d.reason.find("not 15 % faster"), std::string::npos) << d.reason;
}

TEST(PrecisionRule, ClearWinButInaccurateKeepsFp32) {
  // 0.05 off on outputs up to 1.0 = 5 %, above the 2 % bound.
  const auto d = decide_precision(kFp32, {7, 7, 7, 7, 7}, 0.05, 1.0);
  EXPECT_FALSE(d.bf16);
  EXPECT_DOUBLE_EQ(d.rel_error, 0.05);
  EXPECT_NE(d.reason.find("error above the 2 % bound"), std::string::npos) << d.reason;
  EXPECT_TRUE(decide_precision(kFp32, {7, 7, 7, 7, 7}, 0.02, 1.0).bf16);
}

TEST(PrecisionRule, ErrorIsAbsoluteWhereFp32OutputsAreZero) {
  EXPECT_TRUE(decide_precision(kFp32, {7, 7, 7, 7, 7}, 0.01, 0).bf16);
  EXPECT_FALSE(decide_precision(kFp32, {7, 7, 7, 7, 7}, 0.5, 0).bf16);
}

TEST(PrecisionRule, NonFiniteErrorKeepsFp32) {
  const auto d = decide_precision(kFp32, {7, 7, 7, 7, 7}, std::nan(""), 1.0);
  EXPECT_FALSE(d.bf16);
  EXPECT_NE(d.reason.find("not finite"), std::string::npos) << d.reason;
}

TEST(PrecisionRule, FastModelKeepsFp32) {
  const auto d = decide_precision({1, 1, 1, 1, 1}, {0.5, 0.5, 0.5, 0.5, 0.5}, 0, 1);
  EXPECT_FALSE(d.bf16);
  EXPECT_NE(d.reason.find("too fast for bf16 to matter"), std::string::npos) << d.reason;
}

TEST(PrecisionRule, TooFewOrUnpairedRoundsKeepFp32) {
  EXPECT_FALSE(decide_precision({10, 10, 10, 10}, {7, 7, 7, 7}, 0, 1).bf16);
  EXPECT_FALSE(decide_precision(kFp32, {7, 7, 7, 7}, 0, 1).bf16);
  EXPECT_FALSE(decide_precision({}, {}, 0, 1).bf16);
  const auto d = decide_precision({10, 10, 10, 10}, {7, 7, 7, 7}, 0, 1);
  EXPECT_NE(d.reason.find("fewer than 5 paired"), std::string::npos) << d.reason;
  EXPECT_NE(decide_precision(kFp32, {7, 7, 7, 7}, 0, 1).reason.find("unpaired"), std::string::npos);
}

TEST(PrecisionRule, FirstLostRoundDecidesAlone) {
  // The engine stops timing at a lost round: one round is enough to keep fp32.
  const auto d = decide_precision({10}, {30}, 0, 1);
  EXPECT_FALSE(d.bf16);
  EXPECT_EQ(d.rounds, 1);
  EXPECT_NE(d.reason.find("not faster in every round"), std::string::npos) << d.reason;
  // Its accuracy was not measured, and the figures do not pretend it was.
  EXPECT_EQ(d.reason.find("error"), std::string::npos) << d.reason;
}

TEST(PrecisionRule, SameFiguresSameChoice) {
  const std::vector<double> b{8.4, 8.0, 8.3, 8.1, 8.2};
  const auto first = decide_precision(kFp32, b, 0.001, 1);
  for (int i = 0; i < 5; ++i) {
    const auto again = decide_precision(kFp32, b, 0.001, 1);
    EXPECT_EQ(again.bf16, first.bf16);
    EXPECT_EQ(again.reason, first.reason);
  }
}

TEST(PrecisionRule, MedianOfEvenAndOddCounts) {
  EXPECT_DOUBLE_EQ(median_of({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median_of({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median_of({}), 0);
}

// ---- the cache --------------------------------------------------------------

class PrecisionCache : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/torchinfer-precision-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root = tmpl;
    dir = root + "/cache";
    key.model_crc32 = 0x12345678;
    key.model_bytes = 1000;
    key.cpu_model = "AMD EPYC Test";
    key.threads = 2;
    key.batch = 4;
    key.torch_version = "1.13.0";
    decision = decide_precision(kFp32, {7, 7, 7, 7, 7}, 0.001, 1.0);
  }
  void TearDown() override { std::system(("rm -rf '" + root + "'").c_str()); }
  std::string root, dir;
  PrecisionKey key;
  PrecisionDecision decision;
};

TEST_F(PrecisionCache, MissThenHitWithTheSameFigures) {
  std::string note;
  EXPECT_FALSE(read_cached_decision(dir, key, &note));
  EXPECT_EQ(note, "");
  const std::string path = write_cached_decision(dir, key, decision, &note);
  EXPECT_EQ(note, "");
  EXPECT_EQ(path, dir + "/" + cache_file_name(key));
  const auto c = read_cached_decision(dir, key, &note);
  ASSERT_TRUE(c);
  EXPECT_EQ(note, "");
  EXPECT_EQ(c->path, path);
  EXPECT_TRUE(c->decision.bf16);
  EXPECT_DOUBLE_EQ(c->decision.fp32_ms, 10);
  EXPECT_DOUBLE_EQ(c->decision.bf16_ms, 7);
  EXPECT_EQ(c->decision.rounds, 5);
  EXPECT_EQ(c->decision.bf16_wins, 5);
  EXPECT_DOUBLE_EQ(c->decision.rel_error, 0.001);
  EXPECT_EQ(c->decision.reason, decision.reason);
  EXPECT_EQ(c->created.size(), 20u) << c->created;  // 2026-11-30T10:12:00Z
  EXPECT_EQ(c->created.back(), 'Z');
  // No temp file is left behind: the folder holds the one cache file.
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(e.path().string(), path);
    ++entries;
  }
  EXPECT_EQ(entries, 1);
}

TEST_F(PrecisionCache, EveryKeyFieldChangesTheFile) {
  const std::string base = cache_file_name(key);
  EXPECT_EQ(base.rfind("precision-", 0), 0u);
  EXPECT_EQ(base.size(), std::string("precision-0123456789abcdef.json").size());
  auto differs = [&](void (*edit)(PrecisionKey&)) {
    PrecisionKey k = key;
    edit(k);
    return cache_file_name(k) != base;
  };
  EXPECT_TRUE(differs([](PrecisionKey& k) { k.threads = 4; }));
  EXPECT_TRUE(differs([](PrecisionKey& k) { k.batch = 8; }));
  EXPECT_TRUE(differs([](PrecisionKey& k) { k.model_crc32 ^= 1; }));
  EXPECT_TRUE(differs([](PrecisionKey& k) { k.model_bytes += 1; }));
  EXPECT_TRUE(differs([](PrecisionKey& k) { k.cpu_model = "Intel Xeon"; }));
  EXPECT_TRUE(differs([](PrecisionKey& k) { k.torch_version = "2.1.0"; }));
  EXPECT_EQ(cache_file_name(key), base);

  std::string note;
  write_cached_decision(dir, key, decision, &note);
  PrecisionKey other = key;
  other.threads = 4;
  EXPECT_FALSE(read_cached_decision(dir, other, &note));
}

TEST_F(PrecisionCache, ModelBytesDecideTheHash) {
  const std::string a = root + "/a.pt", b = root + "/b.pt";
  std::ofstream(a) << "model bytes one";
  std::ofstream(b) << "model bytes two";
  PrecisionKey ka = key, kb = key, ka2 = key;
  hash_model_file(a, &ka);
  hash_model_file(b, &kb);
  hash_model_file(a, &ka2);
  EXPECT_EQ(ka.model_bytes, 15u);
  EXPECT_EQ(ka.model_crc32, ka2.model_crc32);
  EXPECT_NE(ka.model_crc32, kb.model_crc32);
  EXPECT_NE(cache_file_name(ka), cache_file_name(kb));
  EXPECT_THROW(hash_model_file(root + "/missing.pt", &ka), std::exception);
}

TEST_F(PrecisionCache, CorruptFileIsIgnoredAndRewritten) {
  std::string note;
  const std::string path = write_cached_decision(dir, key, decision, &note);
  const std::vector<std::string> bad_files{"{not json", "[]", "{\"precision\": \"bf16\"}",
                                           std::string(70 * 1024, ' ') + "{}"};
  for (const std::string& bad : bad_files) {
    std::ofstream(path, std::ios::trunc) << bad;
    note.clear();
    EXPECT_FALSE(read_cached_decision(dir, key, &note)) << bad.substr(0, 20);
    EXPECT_EQ(note.rfind("precision cache ignored, deciding again: ", 0), 0u) << note;
    EXPECT_NE(note.find(path), std::string::npos) << note;
  }
  note.clear();
  EXPECT_EQ(write_cached_decision(dir, key, decision, &note), path);
  EXPECT_TRUE(read_cached_decision(dir, key, &note));
}

TEST_F(PrecisionCache, UnknownPrecisionIsIgnored) {
  std::string note;
  const std::string path = write_cached_decision(dir, key, decision, &note);
  std::ifstream in(path);
  nlohmann::json j = nlohmann::json::parse(in);
  j["precision"] = "fp8";
  std::ofstream(path, std::ios::trunc) << j.dump();
  EXPECT_FALSE(read_cached_decision(dir, key, &note));
  EXPECT_NE(note.find("unknown precision 'fp8'"), std::string::npos) << note;
}

TEST_F(PrecisionCache, UnwritableFolderSaysSoAndNeverThrows) {
  // A folder below a plain file cannot be created, even by root.
  const std::string file = root + "/plain";
  std::ofstream(file) << "x";
  std::string note;
  EXPECT_EQ(write_cached_decision(file + "/cache", key, decision, &note), "");
  EXPECT_NE(note.find("precision cache not written"), std::string::npos) << note;
  EXPECT_NE(note.find("timed again on every start"), std::string::npos) << note;
  note.clear();
  EXPECT_FALSE(read_cached_decision(file + "/cache", key, &note));
  EXPECT_EQ(note, "");
  EXPECT_EQ(write_cached_decision("", key, decision, &note), "");
  EXPECT_NE(note.find("no cache folder"), std::string::npos) << note;
}

TEST(PrecisionCacheDir, EnvironmentOrder) {
  const char* saved[3] = {getenv("TORCHINFER_CACHE_DIR"), getenv("XDG_CACHE_HOME"), getenv("HOME")};
  const std::string keep[3] = {saved[0] ? saved[0] : "", saved[1] ? saved[1] : "",
                               saved[2] ? saved[2] : ""};
  setenv("HOME", "/home/u", 1);
  unsetenv("XDG_CACHE_HOME");
  unsetenv("TORCHINFER_CACHE_DIR");
  EXPECT_EQ(precision_cache_dir(), "/home/u/.cache/torchinfer");
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(precision_cache_dir(), "/xdg/torchinfer");
  setenv("TORCHINFER_CACHE_DIR", "/override", 1);
  EXPECT_EQ(precision_cache_dir(), "/override");
  unsetenv("TORCHINFER_CACHE_DIR");
  unsetenv("XDG_CACHE_HOME");
  unsetenv("HOME");
  EXPECT_EQ(precision_cache_dir(), "");
  const char* names[3] = {"TORCHINFER_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
  for (int i = 0; i < 3; ++i)
    if (saved[i]) setenv(names[i], keep[i].c_str(), 1);
}

}  // namespace
