#include "eval/verdict_score.h"

#include <set>

namespace torchinfer {

namespace {

bool is_verdict(const std::string& v) {
  return v == "pass" || v == "reject";
}

std::string describe(const TruthPart& p) {
  std::string d = "part " + std::to_string(p.id) + " (" + p.kind;
  for (const std::string& defect : p.defects) d += ", " + defect;
  return d + ")";
}

}  // namespace

VerdictScore score_verdicts(const std::vector<TruthPart>& parts,
                            const std::map<long long, std::string>& predicted,
                            const MotResult& mot) {
  VerdictScore s;
  std::map<int, long long> by_idf1;
  for (const auto& [track, part] : mot.track_to_truth) by_idf1[part] = track;
  std::set<long long> paired;
  for (const TruthPart& p : parts) {
    if (p.verdict.empty()) continue;
    ++s.judged;
    long long track = -1;
    if (const auto it = by_idf1.find(p.id); it != by_idf1.end()) {
      track = it->second;
    } else {
      int longest = 0;
      for (const auto& [t, part] : mot.track_majority) {
        const auto frames = mot.track_frames.find(t);
        const int n = frames == mot.track_frames.end() ? 0 : frames->second;
        if (part == p.id && n > longest) {
          longest = n;
          track = t;
        }
      }
    }
    const auto it = track < 0 ? predicted.end() : predicted.find(track);
    if (track >= 0) {
      s.track_of_part[p.id] = track;
      paired.insert(track);
    }
    if (it == predicted.end() || !is_verdict(it->second)) {
      ++s.missing;
      s.wrong.push_back(describe(p) + ": truth " + p.verdict + ", " +
                        (track < 0 ? std::string("no track followed it")
                                   : "track " + std::to_string(track) + " gave no verdict"));
    } else if (it->second == p.verdict) {
      ++s.correct;
    } else {
      s.wrong.push_back(describe(p) + ": truth " + p.verdict + ", track " + std::to_string(track) +
                        " said " + it->second);
    }
  }
  for (const auto& [track, verdict] : predicted)
    if (is_verdict(verdict) && paired.count(track) == 0) ++s.extra;
  if (s.judged > 0) s.accuracy = static_cast<double>(s.correct) / s.judged;
  return s;
}

}  // namespace torchinfer
