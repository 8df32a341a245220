// The QA line's rules from the command line and the two models' sidecars
// (read with the element's own rules, common/model_config.h): part classes
// from the detector's labels, defect classes from the classifier's (or the
// detector's without one), each checked against the model it belongs to.
#pragma once

#include "parts/core/part_verdicts.h"
#include "parts/qa_frames.h"
#include "qa/qa_options.h"

namespace torchinfer::qa {

// False, after printing why (exit status 2), when the rules cannot work: a
// class the model does not have, a classifier whose task is not
// classification, an unreadable sidecar.
bool make_rules(const Options& o, QaRules& rules, ReadRules& read);

}  // namespace torchinfer::qa
