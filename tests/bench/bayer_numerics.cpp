// Figure, not a test: how far the model input made from a Bayer mosaic is
// from the RGB image the mosaic was made from (cut to whole 2x2 cells and
// area-resized, in float), per order, in normalised units (ImageNet
// mean/std; 1 pixel unit = 0.0171 in the worst channel). Two contents: the
// tests' synthetic image as it is (shapes with near-1-pixel edges) and
// blurred with sigma 2 (what a Bayer camera's optical low-pass filter lets
// through). Run: build/tests/bench/bayer-numerics
#include <cmath>
#include <cstdio>
#include <opencv2/imgproc.hpp>

#include "common/aligned_buffer.h"
#include "frames.h"
#include "preprocess/preprocess.h"

using namespace torchinfer;
using namespace torchinfer::test;

int main() {
  const float mean[3] = {0.485f, 0.456f, 0.406f}, std[3] = {0.229f, 0.224f, 0.225f};
  struct Size {
    int w, h, ow, oh;
  };
  std::printf(
      "| frame -> input | content | path | order | max | mean |\n|---|---|---|---|---|---|\n");
  for (const Size s :
       {Size{2448, 2048, 224, 224}, Size{1920, 1200, 224, 224}, Size{300, 300, 224, 224}})
    for (double sigma : {0.0, 2.0}) {
      cv::Mat rgb = make_rgb_image(s.w, s.h, 1);
      if (sigma > 0) cv::GaussianBlur(rgb, rgb, cv::Size(0, 0), sigma);
      for (Demosaic d : {Demosaic::kLattice, Demosaic::kBilinear})
        for (PixelFormat f : {PixelFormat::kBayerRGGB, PixelFormat::kBayerBGGR,
                              PixelFormat::kBayerGRBG, PixelFormat::kBayerGBRG}) {
          PreprocessOptions o;
          o.out_width = s.ow, o.out_height = s.oh;
          for (int c = 0; c < 3; ++c)
            o.alpha[c] = 1.f / (255 * std[c]), o.beta[c] = -mean[c] / std[c];
          o.demosaic = d;
          const OwnedFrame frame = make_frame(rgb, f);
          Preprocessor pre(o);
          AlignedBuffer dst(o.slot_bytes());
          pre.run(frame.view, dst.data<float>());
          const std::vector<float> ref = reference_preprocess(rgb, f, o);
          double worst = 0, sum = 0;
          for (std::size_t i = 0; i < ref.size(); ++i) {
            const double e = std::fabs(ref[i] - dst.data<float>()[i]);
            worst = std::max(worst, e), sum += e;
          }
          std::printf("| %dx%d -> %dx%d | %s | %s | %s | %.4f | %.5f |\n", s.w, s.h, s.ow, s.oh,
                      sigma > 0 ? "blurred (sigma 2)" : "sharp",
                      d == Demosaic::kLattice ? "lattice" : "bilinear", to_string(f), worst,
                      sum / ref.size());
        }
    }
  return 0;
}
