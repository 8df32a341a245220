// From the element's settings to a running model: engine and preprocessing
// options, the settings that elements sharing a model-instance-id must agree
// on, and the start-up report (self-check, warnings).
#pragma once

#include <gst/gst.h>

#include <memory>

#include "engine/engine.h"
#include "model/loaded_model.h"
#include "model/model_registry.h"
#include "preprocess/preprocess.h"
#include "torchinfer-settings.h"

namespace torchinfer::gst {

EngineOptions engine_options(const Settings& s, const ModelConfig& config);
PreprocessOptions preprocess_options(const Settings& s, const ModelConfig& config);
SharingKey sharing_key(const Settings& s, const ModelConfig& config);

// Loads the model of `s` (model_path overrides s.model, for hot reload) and
// reports what it did on the element's log and bus. Throws Error.
std::shared_ptr<const LoadedModel> load_for_element(GstElement* self, const Settings& s,
                                                    const ModelConfig& config, int generation);

// Posts a start-up failure: an Error with the domain of its kind
// (element-errors.h), anything else as LIBRARY/INIT.
void post_load_error(GstElement* self, const std::exception& e, const std::string& model);

}  // namespace torchinfer::gst
