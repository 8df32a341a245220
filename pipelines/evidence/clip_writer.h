// An event's clip: frames taken from the EncodedRing, remuxed into Matroska
// without decoding (appsrc ! [h264parse !] matroskamux ! fdsink). Runs on
// the evidence writer's thread, never on a streaming thread.
#pragma once

#include <gst/gst.h>

#include <string>
#include <vector>

#include "evidence/core/encoded_ring.h"

namespace torchinfer::evidence {

// Writes `frames` (caps: the encoder's, image/jpeg or video/x-h264) to the
// open file `fd` (the caller's, left open), timestamps starting at 0.
// Returns the clip's length in seconds, or -1 with `why` (the reason, e.g.
// "Could not write to resource. (Error while writing to file descriptor 9:
// No space left on device)"); the caller then deletes the file.
double write_clip(const std::vector<EncodedFrame>& frames, GstCaps* caps, int fd, std::string* why);

}  // namespace torchinfer::evidence
