// What a stream session keeps of a frame's outputs once the frame has left
// (stream/queued_frame.h FrameRecord::release_outputs): the pooled records
// keep none (a pool of dozens of records once held dozens of frames'
// outputs: 2 GB for 80 frames of 9 tiles), the latest full-frame result is
// kept until the next one, and a tile's result kept for later frames holds
// its own frame's outputs only, not its whole batch's.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/batch_output.h"
#include "grey_model.h"
#include "stream/stream_session.h"

using namespace torchinfer;

namespace {

constexpr int kSide = test::kModelSide;

// A model whose forward() returns a real output: [n, 1], each frame's
// value its slot's grey value; every output it made is watched.
struct WatchedModel {
  std::mutex mu;
  std::vector<std::weak_ptr<const BatchOutput>> made;
  torch::jit::Module module{"m"};

  std::shared_ptr<const LoadedModel> make() {
    auto m = std::make_shared<LoadedModel>();
    m->slot_bytes = test::kModelSlotBytes;
    m->generation = 1;
    m->config.input_width = kSide;
    m->config.input_height = kSide;
    m->run = [this](const void* data, int n) -> std::shared_ptr<const BatchOutput> {
      at::Tensor y = torch::empty({n, 1});
      for (int k = 0; k < n; ++k)
        y[k][0] = static_cast<const float*>(data)[k * test::kModelSlotBytes / sizeof(float)];
      auto out = make_batch_output(c10::IValue(y), torch::empty({1}), module, n, 0);
      std::lock_guard<std::mutex> lk(mu);
      made.push_back(out);
      return out;
    };
    return m;
  }
  bool alive(std::size_t i) {
    std::lock_guard<std::mutex> lk(mu);
    return i < made.size() && !made[i].expired();
  }
  // Output i is freed within 5 s: the batch's worker drops its own
  // reference just after delivering, and may be preempted in between.
  bool freed(std::size_t i) {
    for (int k = 0; k < 5000 && alive(i); ++k)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return !alive(i);
  }
};

struct Grey : FramePixels {
  std::vector<std::uint8_t> px;
  int w, h;
  Grey(int w_, int h_, int v) : px(std::size_t(w_) * h_ * 3, std::uint8_t(v)), w(w_), h(h_) {}
  bool map(FrameView* v) override {
    v->format = PixelFormat::kRGB;
    v->width = w;
    v->height = h;
    v->planes[0] = px.data();
    v->strides[0] = w * 3;
    return true;
  }
  void unmap() override {}
};

OwnedRef token(int i) {
  return OwnedRef(new int(i), [](void* p) { delete static_cast<int*>(p); });
}

// The value frame k of slot `s` carries.
float value_of(const SlotResult& s) {
  return static_cast<const float*>(s.result.output->frame(s.result.index)[0].data)[0];
}

}  // namespace

TEST(SessionOutputs, AFrameThatLeftKeepsNoOutputsOnlyTheLatestIsKept) {
  WatchedModel model;
  StreamSession session;
  SessionOptions o;
  o.preprocess_for = test::preprocess_to(kSide);
  BatcherOptions bo;
  bo.batch_size = 1;
  session.start(std::make_shared<Batcher>(model.make(), bo), o);
  session.resume();
  for (int i = 0; i < 3; ++i) {
    session.submit_frame(token(i), kSide, kSide, i, std::make_unique<Grey>(kSide, kSide, 10 + i));
    {
      std::optional<StreamOutput> out = session.pop();
      ASSERT_TRUE(out && out->inferred);
      session.finish(*out);
    }
    EXPECT_TRUE(model.alive(i)) << "the latest result, for frames not inferred";
    if (i > 0) EXPECT_TRUE(model.freed(i - 1)) << "frame " << i - 1 << " kept its outputs";
  }
  session.stop();
}

TEST(SessionOutputs, KeptTilesHoldTheirOwnFramesOutputsNotTheBatch) {
  WatchedModel model;
  StreamSession session;
  SessionOptions o;
  o.preprocess_for = test::preprocess_to(kSide);
  o.region_mode = true;
  o.tiles = true;
  o.inference_interval = 2;
  BatcherOptions bo;
  bo.batch_size = 2;  // a frame's two tiles in one forward()
  session.start(std::make_shared<Batcher>(model.make(), bo), o);
  session.resume();
  // Two tiles of a 4x2 frame: left grey 10, right grey 50.
  std::vector<RegionOfInterest> tiles(2);
  for (int i = 0; i < 2; ++i) {
    tiles[i].x = i * kSide, tiles[i].width = kSide, tiles[i].height = kSide;
    tiles[i].roi_id = i;
  }
  auto frame = [&](int v) {
    auto g = std::make_unique<Grey>(2 * kSide, kSide, v);
    for (int y = 0; y < kSide; ++y)
      for (int x = kSide; x < 2 * kSide; ++x)
        for (int c = 0; c < 3; ++c) g->px[(std::size_t(y) * 2 * kSide + x) * 3 + c] = 50;
    return g;
  };
  for (int i = 0; i < 2; ++i) {
    session.submit_frame(token(i), 2 * kSide, kSide, i, frame(10), &tiles);
    std::optional<StreamOutput> out = session.pop();
    ASSERT_TRUE(out && out->results);
    const FrameInference& r = *out->results;
    ASSERT_EQ(r.regions.size(), 2u);
    for (int t = 0; t < 2; ++t) {
      const RegionResult& region = r.regions[t];
      ASSERT_GE(region.slot, 0);
      EXPECT_EQ(region.reused, i == 1) << "frame " << i << " tile " << t;
      EXPECT_FLOAT_EQ(value_of(r.slots[region.slot]), t == 0 ? 10.f : 50.f);
      if (i == 1) EXPECT_EQ(r.slots[region.slot].result.output->batch(), 1);
    }
    session.finish(*out);
  }
  ASSERT_TRUE(!model.made.empty());
  EXPECT_TRUE(model.freed(0)) << "the batch of both tiles, kept whole";
  session.stop();
}
