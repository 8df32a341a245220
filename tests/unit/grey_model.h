// The fake model of the stream-session tests: a 2x2 RGB float input whose
// forward() records, per slot, the grey value the test's frame (or region)
// had, so a test sees exactly which frames went into which batch.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "held_forward.h"
#include "model/loaded_model.h"
#include "preprocess/preprocess.h"

namespace torchinfer::test {

constexpr int kModelSide = 2;
constexpr std::size_t kModelSlotBytes = kModelSide * kModelSide * 3 * sizeof(float);

struct GreyModel : HeldForward {
  std::shared_ptr<const LoadedModel> make(int generation = 1) {
    auto m = std::make_shared<LoadedModel>();
    m->slot_bytes = kModelSlotBytes;
    m->generation = generation;
    m->config.input_width = kModelSide;
    m->config.input_height = kModelSide;
    m->run = [this](const void* data, int n) -> std::shared_ptr<const BatchOutput> {
      std::vector<int> seen;
      for (int k = 0; k < n; ++k)
        seen.push_back(static_cast<int>(
            static_cast<const float*>(data)[k * kModelSlotBytes / sizeof(float)] + 0.5f));
      enter(std::move(seen));
      return nullptr;
    };
    return m;
  }
};

// A session's preprocess_for: side x side, alpha 1, beta 0, so the slot
// holds the frame's raw grey value.
inline std::function<PreprocessOptions(const ModelConfig&)> preprocess_to(int side) {
  return [side](const ModelConfig&) {
    PreprocessOptions po;
    po.out_width = side;
    po.out_height = side;
    return po;
  };
}

}  // namespace torchinfer::test
