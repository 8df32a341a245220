// The shipped demo anomaly model (models/demo/part_anomaly.{pt,json}) is what
// models/demo/train_anomaly.py says it is, loaded as torchinfer loads a model
// (libtorch: eval, freeze, optimize_for_inference): anomalib's dict outputs
// for any batch, score = the map's maximum, thresholds inside the observed
// range, and on two crops of the line clip (tests/data/part_anomaly_*,
// written by models/demo/eval_anomaly.py fixture) the verdicts, scores and
// map peak that the Python reference gives.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/script.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace {

using json = nlohmann::json;

std::string source_root() {
  const char* root = std::getenv("TORCHINFER_SOURCE_ROOT");
  return root ? root : ".";
}

std::string demo(const std::string& name) {
  return source_root() + "/models/demo/" + name;
}
std::string data(const std::string& name) {
  return source_root() + "/tests/data/" + name;
}

json read_json(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot open " + path);
  return json::parse(f);
}

// Binary PPM (P6, maxval 255) -> H*W*3 bytes.
std::vector<std::uint8_t> read_ppm(const std::string& path, int size) {
  std::ifstream f(path, std::ios::binary);
  std::string magic;
  int w = 0, h = 0, maxval = 0;
  f >> magic >> w >> h >> maxval;
  f.get();
  if (magic != "P6" || w != size || h != size || maxval != 255)
    throw std::runtime_error(path + ": not a " + std::to_string(size) + "x" + std::to_string(size) +
                             " P6 PPM");
  std::vector<std::uint8_t> px(static_cast<std::size_t>(w) * h * 3);
  if (!f.read(reinterpret_cast<char*>(px.data()), static_cast<std::streamsize>(px.size())))
    throw std::runtime_error(path + ": short file");
  return px;
}

// What torchinfer feeds the model: (pixel/255 - mean)/std, NCHW in
// channels_last memory.
at::Tensor model_input(const std::vector<std::vector<std::uint8_t>>& crops, int size,
                       const json& cfg) {
  at::Tensor x = torch::empty({static_cast<long>(crops.size()), size, size, 3});
  auto a = x.accessor<float, 4>();
  for (std::size_t n = 0; n < crops.size(); ++n)
    for (int y = 0; y < size; ++y)
      for (int xx = 0; xx < size; ++xx)
        for (int c = 0; c < 3; ++c)
          a[n][y][xx][c] =
              (crops[n][(y * size + xx) * 3 + c] / 255.0f - cfg["mean"][c].get<float>()) /
              cfg["std"][c].get<float>();
  return x.permute({0, 3, 1, 2});
}

torch::jit::Module load_as_torchinfer() {
  torch::jit::Module m = torch::jit::load(demo("part_anomaly.pt"));
  m.eval();
  m = torch::jit::freeze(m);
  return torch::jit::optimize_for_inference(m);
}

struct Outputs {
  at::Tensor map, score;
};

Outputs run(torch::jit::Module& m, const at::Tensor& x) {
  c10::InferenceMode guard;
  const c10::impl::GenericDict d = m.forward({x}).toGenericDict();
  std::set<std::string> keys;
  for (const auto& e : d) keys.insert(e.key().toStringRef());
  EXPECT_EQ(keys, (std::set<std::string>{"anomaly_map", "pred_score"}));
  return {d.at("anomaly_map").toTensor().contiguous(), d.at("pred_score").toTensor().contiguous()};
}

// anomalib's normalisation (docs/anomaly.md): threshold -> 0.5, clamped.
double normalised(double raw, const json& cfg) {
  const double s = (raw - cfg["image_threshold"].get<double>()) /
                       (cfg["max"].get<double>() - cfg["min"].get<double>()) +
                   0.5;
  return std::min(1.0, std::max(0.0, s));
}

class DemoAnomalyModel : public ::testing::Test {
 protected:
  void SetUp() override {
    at::set_num_threads(2);
    cfg = read_json(demo("part_anomaly.json"));
    size = cfg["input_width"].get<int>();
    model = load_as_torchinfer();
  }
  json cfg;
  int size = 0;
  torch::jit::Module model;
};

TEST_F(DemoAnomalyModel, SidecarIsAnAnomalyModelWithThresholdsInsideItsRange) {
  EXPECT_EQ(cfg["task"], "anomaly");
  EXPECT_EQ(cfg["input_width"], 96);
  EXPECT_EQ(cfg["input_height"], 96);
  EXPECT_EQ(cfg["channel_order"], "rgb");
  EXPECT_EQ(cfg["mean"], json({0.485, 0.456, 0.406}));
  EXPECT_EQ(cfg["std"], json({0.229, 0.224, 0.225}));
  const double lo = cfg["min"], hi = cfg["max"], thr = cfg["image_threshold"];
  // Mahalanobis distances: never negative; the threshold a quantile of the
  // held-out good scores, so strictly inside their range.
  EXPECT_GE(lo, 0.0);
  EXPECT_LT(lo, thr);
  EXPECT_LT(thr, hi);
  EXPECT_EQ(cfg["pixel_threshold"], cfg["image_threshold"]);
}

TEST_F(DemoAnomalyModel, ReturnsAMapAndItsMaximumForEveryCropOfABatch) {
  for (int batch : {1, 3}) {
    std::vector<std::vector<std::uint8_t>> crops;
    for (int n = 0; n < batch; ++n) {
      std::vector<std::uint8_t> c(static_cast<std::size_t>(size) * size * 3);
      for (std::size_t i = 0; i < c.size(); ++i)
        c[i] = static_cast<std::uint8_t>((i * 7 + n * 40) % 251);
      crops.push_back(c);
    }
    const Outputs o = run(model, model_input(crops, size, cfg));
    ASSERT_EQ(o.map.sizes(), (at::IntArrayRef{batch, 1, size, size})) << "batch " << batch;
    ASSERT_EQ(o.score.sizes(), (at::IntArrayRef{batch})) << "batch " << batch;
    EXPECT_TRUE(torch::isfinite(o.map).all().item<bool>());
    EXPECT_GE(o.map.min().item<float>(), 0.0f);
    for (int n = 0; n < batch; ++n)
      EXPECT_FLOAT_EQ(o.score[n].item<float>(), o.map[n].max().item<float>()) << "crop " << n;
  }
}

TEST_F(DemoAnomalyModel, JudgesTheClipCropsAsThePythonReference) {
  const json fixture = read_json(data("part_anomaly_crops.json"));
  ASSERT_EQ(fixture["crops"].size(), 2u);
  std::vector<std::vector<std::uint8_t>> crops;
  for (const json& c : fixture["crops"]) crops.push_back(read_ppm(data(c["file"]), size));
  const Outputs o = run(model, model_input(crops, size, cfg));
  for (std::size_t n = 0; n < crops.size(); ++n) {
    const json& c = fixture["crops"][n];
    const double raw = o.score[n].item<float>();
    SCOPED_TRACE(c["file"].get<std::string>() + " raw " + std::to_string(raw));
    EXPECT_NEAR(raw, c["raw_score"].get<double>(), 1e-3 * c["raw_score"].get<double>());
    EXPECT_EQ(normalised(raw, cfg) >= 0.5, c["defective"].get<bool>());
    const long peak = o.map[n][0].flatten().argmax().item<long>();
    const double px = peak % size + 0.5, py = peak / size + 0.5;
    EXPECT_EQ(px, c["peak"][0].get<double>());
    EXPECT_EQ(py, c["peak"][1].get<double>());
    for (const json& b : c["defect_boxes"]) {  // the good crop has none
      EXPECT_GE(px, b[0].get<double>());
      EXPECT_LE(px, b[2].get<double>());
      EXPECT_GE(py, b[1].get<double>());
      EXPECT_LE(py, b[3].get<double>());
    }
  }
  EXPECT_FALSE(fixture["crops"][0]["defective"].get<bool>());
  EXPECT_TRUE(fixture["crops"][1]["defective"].get<bool>());
  EXPECT_EQ(fixture["crops"][1]["defect_boxes"].size(), 1u);
}

// Negative: what is not a good part is anomalous, not "normal by default".
TEST_F(DemoAnomalyModel, AnEmptyGreyCropIsAnomalous) {
  const std::vector<std::uint8_t> grey(static_cast<std::size_t>(size) * size * 3, 128);
  const Outputs o = run(model, model_input({grey}, size, cfg));
  EXPECT_GE(normalised(o.score[0].item<float>(), cfg), 0.5);
}

TEST_F(DemoAnomalyModel, AnotherInputSizeIsRefusedNotMisread) {
  // The per-position Gaussians are fitted on a 12x12 grid of 96x96 crops;
  // the model checks the size itself (the frozen graph crashes on another).
  c10::InferenceMode guard;
  for (const auto& shape : {std::vector<long>{1, 3, 64, 64}, std::vector<long>{1, 3, 128, 96},
                            std::vector<long>{1, 1, 96, 96}}) {
    try {
      model.forward({torch::zeros(shape)});
      ADD_FAILURE() << "accepted " << at::IntArrayRef(shape);
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("part_anomaly takes [N, 3, 96, 96] crops"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
