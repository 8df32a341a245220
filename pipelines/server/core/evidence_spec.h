// A camera's "evidence" setting (docs/server.md, "Evidence"): where and how
// long its event files are kept (evidence/evidence_store.h) and which events
// it keeps. On the server an event is a new track of one of `classes`, so
// evidence needs "track": true. No GStreamer here.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "evidence/core/evidence_store.h"

namespace torchinfer::server {

struct EvidenceSpec {
  // dir as given: empty means <output_dir>/evidence/<id>, a relative path is
  // under output_dir (resolve_evidence_dir).
  evidence::EvidenceSettings settings;
  std::vector<std::string> classes;  // detection labels; empty: every class
  // Names of the camera's lines (torchanalytics): when given, an event is a
  // crossing of one of them (by an object of `classes`), not a new track.
  std::vector<std::string> lines;
};

// `j` is the "evidence" object of a stream at field path `field`; `track`
// and `aravis` are the stream's. Throws FieldError (common/field_error.h).
EvidenceSpec parse_evidence_spec(const nlohmann::json& j, const std::string& field,
                                 const std::string& origin, bool track, bool aravis);
nlohmann::json to_json(const EvidenceSpec& e);

// The folder the camera's store uses.
std::string resolve_evidence_dir(const EvidenceSpec& e, const std::string& output_dir,
                                 const std::string& id);

// True when a label is one the camera keeps evidence of.
bool keeps_class(const EvidenceSpec& e, const std::string& label);

}  // namespace torchinfer::server
