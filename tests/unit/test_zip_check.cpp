#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <vector>

#include "common/error.h"
#include "engine/zip_check.h"
#include "test_paths.h"

using namespace torchinfer;

namespace {

std::vector<char> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string write_bytes(const std::string& name, const std::vector<char>& bytes) {
  const std::string path = testing::TempDir() + name;
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

ErrorKind kind_of(const std::string& path) {
  try {
    verify_zip_archive(path);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    return e.kind();
  }
  ADD_FAILURE() << path << " accepted";
  return ErrorKind::kRuntime;
}

}  // namespace

TEST(ZipCheck, AcceptsRealModels) {
  for (const char* m : {"tiny_classifier.pt", "dict_output.pt", "two_inputs.pt"})
    EXPECT_NO_THROW(verify_zip_archive(test::model_path(m))) << m;
}

TEST(ZipCheck, RejectsDamage) {
  const auto good = read_all(test::model_path("tiny_classifier.pt"));
  ASSERT_GT(good.size(), 4000u);
  EXPECT_EQ(kind_of("/nonexistent/model.pt"), ErrorKind::kNotFound);
  EXPECT_EQ(kind_of(write_bytes("empty.pt", {})), ErrorKind::kModelInvalid);
  EXPECT_EQ(kind_of(write_bytes("text.pt", std::vector<char>(5000, 'x'))),
            ErrorKind::kModelInvalid);
  EXPECT_EQ(kind_of(write_bytes("trunc.pt",
                                std::vector<char>(good.begin(), good.begin() + good.size() / 2))),
            ErrorKind::kModelInvalid);
}

// A flipped bit in any stored tensor (entries named .../data/N) must be caught;
// libtorch itself would load such a file and compute wrong results.
TEST(ZipCheck, RejectsFlippedWeightBits) {
  const auto good = read_all(test::model_path("tiny_classifier.pt"));
  auto u16 = [&](std::size_t p) {
    return static_cast<unsigned char>(good[p]) | static_cast<unsigned char>(good[p + 1]) << 8;
  };
  int weights = 0;
  for (std::size_t off = 0; off + 30 < good.size(); ++off) {
    if (good[off] != 'P' || good[off + 1] != 'K' || good[off + 2] != 3 || good[off + 3] != 4)
      continue;
    const std::size_t name_len = u16(off + 26), extra_len = u16(off + 28);
    const std::string name(&good[off + 30], name_len);
    // Local headers may leave the size to a trailing descriptor: the data
    // runs up to the next "PK" record.
    const std::size_t start = off + 30 + name_len + extra_len;
    std::size_t end = start;
    while (end + 1 < good.size() && !(good[end] == 'P' && good[end + 1] == 'K')) ++end;
    const std::size_t size = end - start;
    if (name.find("/data/") == std::string::npos || size == 0) continue;
    auto flipped = good;
    flipped[start + size / 2] ^= 0x04;
    EXPECT_EQ(kind_of(write_bytes("flip.pt", flipped)), ErrorKind::kModelInvalid) << name;
    ++weights;
  }
  EXPECT_GE(weights, 4);  // conv, bn and linear tensors
}
