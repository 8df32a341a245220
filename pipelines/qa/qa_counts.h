// The QA-line app's end-of-run counts for a person (stderr) and, with
// --codes, the summary's "codes" object.
#pragma once

#include <gst/gst.h>

#include <nlohmann/json.hpp>
#include <string>

#include "parts/core/decision_json.h"
#include "parts/core/part_verdicts.h"

namespace torchinfer::qa {

// "qa-line: counts: ..." on stderr; with `codes` also the parts without a
// readable code.
void print_counts(const QaCounts& c, const QaRunInfo& run, bool codes);

// --codes: the summary's "codes": parts decided with and without a code,
// and the torchcodes element's figures (views tried, read, failed, skipped
// because the track's code was known); also printed for a person.
nlohmann::ordered_json codes_facts(GstElement* pipeline, const QaCounts& c);

// The code part of a decision's stderr line: ", code DataMatrix 'SN-0001'",
// ", no readable code", or "" without --codes.
std::string code_note(const QaDecision& d, bool codes);

}  // namespace torchinfer::qa
