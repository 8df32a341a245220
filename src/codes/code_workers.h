// Reading codes off the streaming thread: a fixed pool of threads reading
// jobs (a dense copy of one area's luma, so the frame's buffer can move on
// and be drawn on downstream while it is read), a bound on the jobs queued
// or running, and a collect() that waits for the given jobs no longer than
// a deadline. Results of jobs that finish later come with a later
// collect(): nothing is dropped while the pool lives.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "codes/code_reader.h"

namespace torchinfer {

struct CodeJob {
  std::uint64_t id = 0;
  std::vector<std::uint8_t> luma;  // width x height, rows packed
  int width = 0, height = 0;
  double x0 = 0, y0 = 0;  // the area's top-left corner in the frame
};

struct CodeJobDone {
  std::uint64_t id = 0;
  CodeRead read;  // boxes in frame pixels
};

// The dense copy of `area` (whole pixels inside the frame) for a job.
CodeJob copy_area(const LumaView& frame, const CodeBox& area, std::uint64_t id);

// Reads a job's copy with `reader` and moves the boxes back to the frame.
CodeRead read_job(const CodeReader& reader, const CodeJob& job);

class CodeWorkers {
 public:
  using Clock = std::chrono::steady_clock;
  using Read = std::function<CodeRead(const CodeJob&)>;

  // threads >= 1; max_pending >= 1 jobs queued or running at once.
  CodeWorkers(unsigned threads, std::size_t max_pending, Read read);
  // Jobs not started are abandoned; running ones finish first.
  ~CodeWorkers();
  CodeWorkers(const CodeWorkers&) = delete;
  CodeWorkers& operator=(const CodeWorkers&) = delete;

  // False (the job is not taken) when max_pending jobs are queued or running.
  bool submit(CodeJob job);

  // Every job finished so far, in the order they finished; first waits until
  // all of `ids` have finished or `deadline` has passed.
  std::vector<CodeJobDone> collect(const std::vector<std::uint64_t>& ids,
                                   Clock::time_point deadline);

  std::size_t pending() const;

 private:
  void run();
  bool all_done(const std::vector<std::uint64_t>& ids) const;  // with lock_ held

  Read read_;
  std::size_t max_pending_;
  mutable std::mutex lock_;
  std::condition_variable work_, finished_;
  std::deque<CodeJob> queue_;
  std::vector<std::uint64_t> running_;
  std::vector<CodeJobDone> done_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace torchinfer
