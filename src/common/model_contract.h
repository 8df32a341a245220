// The preprocessing contract of a model, from its sidecar: how a crop is
// padded, how the input is resized, which region classes a second-stage
// model judges. The element applies it unless a property says otherwise,
// and reports where each value came from.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/model_config.h"

namespace torchinfer {

// Sidecar keys of the contract (model_config.cpp accepts them).
const std::set<std::string>& contract_sidecar_keys();

// Reads object_padding, resize, pad_value, object_classes, tile_width,
// tile_height and tile_overlap into
// cfg.contract. Throws kConfigInvalid naming `origin` and the key.
void parse_contract_keys(const nlohmann::json& j, const std::string& origin, ModelConfig& cfg);

// What the element's properties set explicitly (unset = not overriding).
struct ContractOverrides {
  std::optional<double> object_padding;
  std::optional<bool> keep_aspect_ratio;  // true letterbox, false stretch
  std::optional<int> pad_value;
  std::optional<std::vector<std::string>> object_classes;  // empty: every region
  std::optional<int> tile_width, tile_height;              // 0 = the model's input
  std::optional<double> tile_overlap;
};

enum class ValueSource { kDefault, kSidecar, kProperty };
const char* to_string(ValueSource s);

template <typename T>
struct Sourced {
  T value;
  ValueSource from = ValueSource::kDefault;
};

struct ResolvedContract {
  Sourced<double> object_padding{0.0};
  Sourced<ResizeMode> resize{ResizeMode::kStretch};
  Sourced<int> pad_value{114};
  Sourced<std::vector<std::string>> object_classes{{}};  // empty: every region
  Sourced<int> tile_width{0}, tile_height{0};            // 0 = the model's input
  Sourced<double> tile_overlap{0.2};
};

// Property over sidecar over default, per value.
ResolvedContract resolve_contract(const InputContract& sidecar, const ContractOverrides& props);

// One line for the start log: "object-padding 0.1 (sidecar), resize
// stretch (default), pad-value 114 (default), object-class bracket,washer
// (property), tile-width 640 (sidecar), tile-height 480 (sidecar),
// tile-overlap 0.2 (default)"; a tile size of 0 reads "input".
std::string describe(const ResolvedContract& c);

}  // namespace torchinfer
