// Files users hand over as models that are not usable TorchScript (made by
// models/make_hostile_test_models.py), and settings that ask for more memory
// than there is: each error says what the file is and what to do, in words
// an operator acts on, not libtorch's internals.
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "common/model_config.h"
#include "engine/engine.h"
#include "model/model_loader.h"
#include "test_paths.h"

using namespace torchinfer;

namespace {

EngineOptions opts(const std::string& model, int w = 16, int h = 16) {
  EngineOptions o;
  o.model_path = test::model_path(model);
  o.input_width = w;
  o.input_height = h;
  o.warmup_runs = 1;
  o.threads = 1;
  o.precision = Precision::kFp32;
  return o;
}

// Loads expecting `kind`; every key must be in the message, every banned
// phrase absent.
void expect_load_error(const EngineOptions& o, ErrorKind kind,
                       std::initializer_list<std::string> keys,
                       std::initializer_list<std::string> banned = {}) {
  try {
    Engine e(o);
    ADD_FAILURE() << o.model_path << " loaded";
  } catch (const Error& err) {
    const std::string msg = err.what();
    EXPECT_EQ(err.kind(), kind) << msg;
    EXPECT_NE(msg.find(o.model_path), std::string::npos) << msg;
    for (const auto& k : keys) EXPECT_NE(msg.find(k), std::string::npos) << k << " not in: " << msg;
    for (const auto& b : banned) EXPECT_EQ(msg.find(b), std::string::npos) << b << " in: " << msg;
  }
}

}  // namespace

TEST(HostileModels, TheValidOneLoads) {
  Engine e(opts("hostile_net.pt"));
  EXPECT_TRUE(e.info().optimized);
}

TEST(HostileModels, DeflatedEntriesLoad) {
  Engine e(opts("deflated.pt"));
  EXPECT_TRUE(e.info().frozen);
}

// Was: "PytorchStreamReader failed locating file constants.pkl".
TEST(HostileModels, TorchSavePicklesSayHowToExport) {
  for (const char* m : {"state_dict.pt", "pickled_module.pt", "legacy_pickle.pt"}) {
    SCOPED_TRACE(m);
    expect_load_error(opts(m), ErrorKind::kModelInvalid,
                      {"torch.save()", "not TorchScript", "models/export.py",
                       "torch.jit.trace/torch.jit.script", "torch.jit.save"},
                      {"constants.pkl", "PytorchStreamReader"});
  }
}

// Was: "required keyword attribute 'value' is undefined".
TEST(HostileModels, OptimizedInPythonSaysSaveBeforeOptimising) {
  expect_load_error(
      opts("optimized_in_python.pt"), ErrorKind::kModelInvalid,
      {"saved after torch.jit.optimize_for_inference",
       "save the traced or scripted model before optimising it", "torchinfer optimises at load"});
}

// Was: "INTERNAL ASSERT FAILED ... please report a bug to PyTorch".
TEST(HostileModels, ZipWithoutVersionIsNotTorchScript) {
  expect_load_error(
      opts("no_version.pt"), ErrorKind::kModelInvalid,
      {"without the 'version' record", "not written by torch.jit.save", "models/export.py"},
      {"INTERNAL ASSERT", "report a bug"});
}

TEST(HostileModels, EditedCodeSaysReExport) {
  expect_load_error(opts("code_edited.pt"), ErrorKind::kModelInvalid,
                    {"models/export.py", "torch.jit.save"}, {"report a bug"});
}

// Warm-up at a size no machine has: which settings, how many bytes.
TEST(HostileModels, OutOfMemoryAtWarmUpNamesTheSettings) {
  EngineOptions o = opts("hostile_net.pt", 8192, 8192);
  o.warmup_batch_sizes = {16384};
  expect_load_error(
      o, ErrorKind::kConfigInvalid,
      {"out of memory at warm-up", "input_width 8192 x input_height 8192 x batch-size 16384",
       "needs 13194139533312 bytes", "lower batch-size or input_width/input_height"});
}

TEST(HostileModels, OutOfMemoryThroughTheLoaderNamesTheSettings) {
  ModelConfig cfg;
  cfg.input_width = 8192;
  cfg.input_height = 8192;
  try {
    // The loader warms batch 1 only (at the engine's 16x16): the batch it
    // reserves for the configured 8192x8192 is what cannot be had.
    load_model(opts("hostile_net.pt"), cfg, 16384);
    ADD_FAILURE() << "loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfigInvalid) << e.what();
    EXPECT_NE(std::string(e.what()).find(": out of memory at the batch timing: input_width 8192 x "
                                         "input_height 8192 x batch-size 16384"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find(" bytes"), std::string::npos) << e.what();
  }
}
