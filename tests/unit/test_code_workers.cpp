// src/codes/code_workers.h and CodeSession on workers: jobs read off the
// caller's thread, the wait bounded by a deadline, late results carried by
// their track, a full pool counted. Reads are held back with a gate, never
// timed: a result is late because the test holds it.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "code_symbols.h"
#include "codes/code_session.h"
#include "codes/code_workers.h"

using namespace torchinfer;
using torchinfer::test::GreyCanvas;
using Clock = CodeWorkers::Clock;

namespace {

// Reads wait until the test opens the gate.
class Gate {
 public:
  void open() {
    {
      std::lock_guard<std::mutex> g(m_);
      open_ = true;
    }
    cv_.notify_all();
  }
  void pass() {
    std::unique_lock<std::mutex> g(m_);
    cv_.wait(g, [this] { return open_; });
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool open_ = false;
};

CodeJob job(std::uint64_t id) {
  CodeJob j;
  j.id = id;
  return j;
}

const auto kForever = Clock::now() + std::chrono::hours(1);

GreyCanvas part_frame() {
  GreyCanvas f(400, 200);
  paste(f, test::render_symbol("DataMatrix", "SN-A", 4), 30, 60);
  return f;
}

LumaView view(const GreyCanvas& c) {
  return {c.pixels.data(), c.pixels.size(), c.width, c.height, 1, c.width};
}

const CodeBox kPart{20, 40, 120, 160};

}  // namespace

TEST(CodeWorkers, ADeadlineBoundsTheWaitAndTheResultComesWithALaterCollect) {
  Gate gate;
  CodeWorkers w(1, 4, [&](const CodeJob& j) {
    gate.pass();
    CodeRead r;
    r.error = "job " + std::to_string(j.id);
    return r;
  });
  ASSERT_TRUE(w.submit(job(7)));
  EXPECT_TRUE(w.collect({7}, Clock::now()).empty());
  EXPECT_EQ(w.pending(), 1u);
  gate.open();
  const std::vector<CodeJobDone> done = w.collect({7}, kForever);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].id, 7u);
  EXPECT_EQ(done[0].read.error, "job 7");
  EXPECT_EQ(w.pending(), 0u);
}

TEST(CodeWorkers, AFullPoolRefusesAJobAndAThrowingReadFails) {
  Gate gate;
  CodeWorkers w(1, 2, [&](const CodeJob& j) -> CodeRead {
    gate.pass();
    if (j.id == 2) throw std::runtime_error("boom");
    return {};
  });
  EXPECT_TRUE(w.submit(job(1)));
  EXPECT_TRUE(w.submit(job(2)));
  EXPECT_FALSE(w.submit(job(3)));
  gate.open();
  std::vector<CodeJobDone> done = w.collect({1, 2}, kForever);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[1].id, 2u);
  EXPECT_EQ(done[1].read.status, CodeReadStatus::kFailed);
  EXPECT_EQ(done[1].read.error, "boom");
  EXPECT_TRUE(w.submit(job(3)));  // room again
}

TEST(CodeWorkers, TheCopyOfAnAreaReadsBackInFramePixels) {
  const GreyCanvas f = part_frame();
  const std::vector<std::uint8_t> yuy2 = test::to_yuy2(f);
  const LumaView v{yuy2.data(), yuy2.size(), f.width, f.height, 2, f.width * 2};
  const CodeJob j = copy_area(v, {10, 28, 130, 172}, 1);
  EXPECT_EQ(j.width, 120);
  EXPECT_EQ(j.height, 144);
  EXPECT_EQ(j.luma[0], f.pixels[28 * 400 + 10]);
  CodeOptions o;
  o.padding = 0;
  const CodeRead direct = CodeReader(o).read(v, CodeBox{10, 28, 130, 172});
  const CodeRead copied = read_job(CodeReader(o), j);
  ASSERT_EQ(copied.codes.size(), 1u);
  EXPECT_EQ(copied.codes[0].text, "SN-A");
  EXPECT_EQ(copied.codes[0].box, direct.codes.at(0).box);
}

TEST(CodeSessionOnWorkers, WithinTheBudgetResultsAreThoseOfTheFrame) {
  CodeSessionOptions o;
  o.workers = 2;
  o.budget_ms = 3600e3;  // waits until done
  CodeSession s(o);
  const GreyCanvas f = part_frame();
  const FrameCodes r = s.process(view(f), {{kPart, "part", 1}, {kPart, "part", std::nullopt}});
  ASSERT_TRUE(r.regions[0]);
  EXPECT_EQ(r.regions[0]->code.text, "SN-A");
  ASSERT_TRUE(r.regions[1]);
  EXPECT_EQ(r.regions[1]->code.text, "SN-A");
  EXPECT_EQ(s.totals().tried, 2u);
  EXPECT_EQ(s.totals().read, 2u);
  EXPECT_EQ(s.totals().late, 0u);
}

TEST(CodeSessionOnWorkers, ALateReadIsCarriedByItsTrackAndCounted) {
  Gate gate;
  CodeSessionOptions o;
  o.workers = 1;
  o.budget_ms = 0;
  o.full_frame = FullFrameMode::kNever;
  CodeOptions reader_options;
  reader_options.padding = o.reader.padding;
  const CodeReader reader(reader_options);
  CodeSession s(o, [&](const CodeJob& j) {
    gate.pass();
    return read_job(reader, j);
  });
  const GreyCanvas f = part_frame();
  // Frame 1: the read is held; nothing on the frame.
  FrameCodes r = s.process(view(f), {{kPart, "part", 5}, {kPart, "part", std::nullopt}});
  EXPECT_FALSE(r.regions[0]);
  EXPECT_FALSE(r.regions[1]);
  // Frame 2: track 5's read still runs: not read again (deferred).
  r = s.process(view(f), {{kPart, "part", 5}});
  EXPECT_FALSE(r.regions[0]);
  EXPECT_EQ(s.totals().deferred, 1u);
  gate.open();
  // Frames without regions take the finished reads (a frame read whole is
  // off here) until both came; they are late: track 5's code is carried
  // from then on (read on frame 1), the untracked one's only counts.
  while (s.totals().tried < 2) {
    s.process(view(f), {});
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  r = s.process(view(f), {{kPart, "part", 5}});
  ASSERT_TRUE(r.regions[0]);
  EXPECT_EQ(r.regions[0]->code.text, "SN-A");
  EXPECT_EQ(r.regions[0]->frame, 1u);
  EXPECT_EQ(s.totals().late, 2u);
  EXPECT_EQ(s.totals().read, 2u);
}

TEST(CodeSessionOnWorkers, AFullPoolDefersAndARegionOutsideIsRefusedAtOnce) {
  Gate gate;
  CodeSessionOptions o;
  o.workers = 1;
  o.max_pending = 1;
  CodeSession s(o, [&](const CodeJob&) {
    gate.pass();
    return CodeRead{};
  });
  const GreyCanvas f = part_frame();
  s.process(view(f), {{kPart, "part", 1}, {kPart, "part", 2}, {{900, 900, 950, 950}, "part", 3}});
  EXPECT_EQ(s.totals().deferred, 1u);  // track 2: the pool was full
  EXPECT_EQ(s.totals().failed, 1u);    // track 3: outside the frame
  EXPECT_EQ(s.totals().tried, 1u);
  gate.open();
}
