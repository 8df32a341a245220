// The QA line's pipeline, built element by element with every setting given
// as a property value, as torchinfer-server builds its cameras
// (pipelines/server/camera.cpp): a path with a quote or a space is only a
// value, never launch syntax. --source alone is a launch fragment, by
// definition, and becomes one bin.
//
//   source ! torchinfer name=infer (detector) ! torchnms name=nms
//   ! torchtrack name=track [! torchinfer name=segment ! torchnms (--segmenter)]
//   [! torchinfer name=classify (roi-list)]
//   [! torchinfer name=anomaly (roi-list)] [! torchanalytics name=gate (--gate)]
//   ! identity name=analysed
//   ! fakesink | torchmetaconvert ! torchoverlay ! videoconvert ! BGR
//                ! identity name=annotated ! jpegenc ! matroskamux ! fdsink
//
// Results are read at the src pad of "analysed"; "annotated" is where the
// verdicts are drawn (--out).
#pragma once

#include <gst/gst.h>

#include <string>

#include "parts/core/part_verdicts.h"
#include "qa/qa_options.h"

namespace torchinfer::qa {

// --evidence: a tee of this name follows "analysed"; the evidence recorder
// takes a branch of it (pipelines/qa/qa_evidence.h).
constexpr const char* kEvidenceTee = "evidence";

// The pipeline (floating reference sunk: the caller owns it), or nullptr
// with `why` set: an element not installed, a --source that does not parse.
// `video_fd`: the annotated video's file (--out), opened by the caller
// without blocking (open_output_file: filesink's own open would wait forever
// on a FIFO nobody reads) and closed by it after the pipeline; -1 without --out.
GstElement* build_pipeline(const Options& o, const QaRules& rules, int video_fd, std::string* why);

// torchtrack confirms a track after min-hits inferred frames (3 by default):
// with the detector on every Nth frame that would leave a new part without
// an id for 3N frames, so the app keeps the wait near 3 frames.
int min_hits(int inference_interval);

}  // namespace torchinfer::qa
