// Anomaly heat maps on video (torchoverlay): the map of an anomaly result
// blended with a colour map onto the frame area it covers, in the frame's
// own pixel format.
#pragma once

#include "common/tensor.h"
#include "decode/anomaly.h"

namespace torchinfer {

struct Rgb;

struct OverlayHeatMap {
  TensorView map;      // [1,1,h,w] or [1,h,w]; memory owned by the caller
  MapRule rule;        // how raw values become decision units
  MapPlacement where;  // map -> frame pixels, clipped to the frame or a part's box
};

// A map value in decision units as 0..1 for display: normalised values as
// they are; raw values (no thresholds) scaled so the threshold sits at 0.5,
// as it does on normalised maps.
double heat_of(double decision_value, const MapRule& rule);

// JET colour map (OpenCV's): 0 dark blue .. 0.5 green .. 1 dark red.
Rgb heat_colour(double heat);

// dst + (c - dst) * alpha, rounded: what the heat map does to each sample.
std::uint8_t blend_sample(std::uint8_t dst, std::uint8_t c, double alpha);

}  // namespace torchinfer
