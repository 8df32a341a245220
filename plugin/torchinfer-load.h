// From the element's settings to a running model: engine and preprocessing
// options, the settings that elements sharing a model-instance-id must agree
// on, and the start-up report (self-check, warnings).
#pragma once

#include <gst/gst.h>

#include <memory>

#include "batching/model_registry.h"
#include "common/model_contract.h"
#include "engine/engine.h"
#include "model/lanes_rule.h"
#include "model/loaded_model.h"
#include "preprocess/preprocess.h"
#include "torchinfer-settings.h"

namespace torchinfer::gst {

EngineOptions engine_options(const Settings& s, const ModelConfig& config);
PreprocessOptions preprocess_options(const Settings& s, const ModelConfig& config);
SharingKey sharing_key(const Settings& s, const ModelConfig& config);

// The lanes `s` loads its model as: `lanes`, or for lanes=0 the rule's
// choice for the physical cores of `cores` (else of the process's
// affinity) and `threads`. Throws Error for a malformed `cores`.
LanesPlan lanes_plan(const Settings& s);

// Loads the model of `s` and reports what it did on the element's log and
// bus. Throws Error.
std::shared_ptr<const LoadedModel> load_for_element(GstElement* self, const Settings& s,
                                                    const ModelConfig& config, int generation);

// Hot reload of the instance `batcher` runs: `path` with its own sidecar and
// the rest of `run` (the element's settings at start), through the registry
// when `run` names a model-instance-id, so that every element sharing it
// switches (ModelRegistry::reload). Throws Error; the running model stays.
std::shared_ptr<const LoadedModel> reload_for_element(GstElement* self, Settings run,
                                                      const std::string& path, Batcher& batcher);

// Says at start which preprocessing contract the element applies and where
// each value came from (property, sidecar, default): an INFO line and a
// "torchinfer-contract" element message.
void post_contract(GstElement* self, const ResolvedContract& c);

// Posts "torchinfer-model-reloaded" (model, generation, load-time) and a
// latency message (the batch time may have changed).
void post_model_reloaded(GstElement* self, const LoadedModel& m);

// Posts a start-up failure: an Error with the domain of its kind
// (element-errors.h), anything else as LIBRARY/INIT.
void post_load_error(GstElement* self, const std::exception& e, const std::string& model);

}  // namespace torchinfer::gst
