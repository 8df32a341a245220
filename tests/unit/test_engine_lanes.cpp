// A batcher over real engines (load_model): each lane's worker is the
// engine thread that loaded the lane, and a reload frees the old lanes on
// their own threads. Apart from test_batcher_lanes.cpp, which is also built
// without libtorch under TSan (scripts/sanitize.sh).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "batcher_fakes.h"
#include "common/cpu_set.h"
#include "common/sysinfo.h"
#include "engine/engine.h"
#include "model/model_loader.h"
#include "test_paths.h"

using namespace torchinfer;
using namespace torchinfer::test;
using namespace std::chrono_literals;

namespace {

// identity.pt with one thread per lane: two lanes where there are two
// physical cores, else one.
std::shared_ptr<const LoadedModel> identity_lanes(int generation) {
  EngineOptions o;
  o.model_path = test::model_path("identity.pt");
  o.input_width = 8;
  o.input_height = 6;
  o.warmup_runs = 1;
  o.precision = Precision::kFp32;
  ModelConfig c;
  c.input_width = 8;
  c.input_height = 6;
  const int lanes = physical_cores(allowed_cpus()) >= 2 ? 2 : 1;
  o.threads = lanes;
  return load_model(o, c, 1, generation, lanes);
}

void put_zeros(Batcher& b, int value, Results& res) {
  Batcher::Slot s = b.acquire(true, kNotCancelled);
  ASSERT_TRUE(s);
  std::memset(s.data, 0, s.model->slot_bytes);
  b.commit(s, res.cb(value));
}

bool thread_alive(int tid) {
  return access(("/proc/self/task/" + std::to_string(tid)).c_str(), F_OK) == 0;
}

}  // namespace

// Each lane's batches run on the thread that loaded the lane, its engine's
// own (EngineInfo::thread_ids[0]): one thread per lane loads, runs and frees
// it, and no second team exists for the lane.
TEST(EngineLanes, BatchesRunOnTheEngineThreadsThatLoadedTheLanes) {
  const auto model = identity_lanes(1);
  std::mutex mu;
  std::map<int, int> tid_of;  // frame -> thread that prepared it
  Results res;
  {
    Batcher batcher(model, opts(1));
    for (int v = 0; v < 12; ++v) {
      Batcher::Slot s = batcher.acquire(true, kNotCancelled);
      ASSERT_TRUE(s);
      batcher.commit(s, res.cb(v),
                     [&, v](void* dst, const LoadedModel& m, int, int, int) -> std::string {
                       std::memset(dst, 0, m.slot_bytes);
                       std::lock_guard<std::mutex> lk(mu);
                       tid_of[v] = current_tid();
                       return {};
                     });
    }
    res.wait_for(12);
  }
  for (auto& [v, r] : res.got) {
    ASSERT_TRUE(r.error.empty()) << r.error;
    const EngineInfo& lane = model->lane(r.lane).engine->info();
    ASSERT_EQ(lane.thread_ids.size(), 1u) << "one thread per lane here";
    EXPECT_EQ(tid_of[v], lane.thread_ids[0]) << "frame " << v << " on lane " << r.lane;
  }
}

// A reload that drops the batcher's last reference to the old model frees
// each old lane on its own thread, once its worker has ended: the reload
// returns, and the old engines' threads are gone.
TEST(EngineLanes, AReloadFreesTheOldLanesOnTheirOwnThreads) {
  auto first = identity_lanes(1);
  std::vector<int> old_threads;
  for (int i = 0; i < first->lane_count(); ++i)
    old_threads.push_back(first->lane(i).engine->info().thread_ids[0]);
  auto second = identity_lanes(2);
  Results res;
  Batcher batcher(std::move(first), opts(1));
  for (int v = 0; v < 4; ++v) put_zeros(batcher, v, res);
  res.wait_for(4);
  res.got.clear();  // the results held the old model too
  auto reload = std::async(std::launch::async, [&] { batcher.replace_model(second); });
  if (reload.wait_for(60s) != std::future_status::ready) {
    ADD_FAILURE() << "replace_model never returned: freeing the old lanes waits for itself";
    std::_Exit(1);  // the hung reload would keep the test from ending
  }
  reload.get();
  for (int tid : old_threads)
    for (int i = 0; i < 200 && thread_alive(tid); ++i) std::this_thread::sleep_for(10ms);
  for (int tid : old_threads) EXPECT_FALSE(thread_alive(tid)) << "old lane thread " << tid;
  for (int v = 0; v < 4; ++v) put_zeros(batcher, v, res);
  res.wait_for(4);
  for (auto& [v, r] : res.got) {
    EXPECT_TRUE(r.error.empty()) << r.error;
    EXPECT_EQ(r.model->generation, 2);
  }
}
