// Scores per-part QA verdicts (pass/reject) of a tracking app against the
// truth parts of a clip. Each truth part is paired with one track: the one
// the IDF1 assignment gave it (mot_metrics.h), or, failing that, the longest
// track whose boxes matched it more often than any other part. The part is
// right when that track's verdict equals the truth's.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "eval/mot_metrics.h"
#include "eval/truth_file.h"

namespace torchinfer {

struct VerdictScore {
  int judged = 0;  // truth parts with a verdict (seen whole)
  int correct = 0;
  double accuracy = 0;  // correct / judged; 0 when nothing is judged
  int missing = 0;      // judged parts whose track gave no pass/reject (or no track)
  // pass/reject verdicts of tracks paired with no judged part (a part
  // counted twice, a phantom); they make no part wrong but are reported.
  int extra = 0;
  std::map<int, long long> track_of_part;  // judged part id -> paired track
  std::vector<std::string> wrong;          // one line per wrong or missing part
};

// `predicted`: track id -> verdict; only "pass" and "reject" count as
// verdicts (anything else, e.g. "incomplete", is none).
VerdictScore score_verdicts(const std::vector<TruthPart>& parts,
                            const std::map<long long, std::string>& predicted,
                            const MotResult& mot);

}  // namespace torchinfer
