#include "codes/code_workers.h"

#include <algorithm>
#include <exception>

namespace torchinfer {

CodeJob copy_area(const LumaView& f, const CodeBox& area, std::uint64_t id) {
  CodeJob job;
  job.id = id;
  job.x0 = area.x_min;
  job.y0 = area.y_min;
  const int x0 = static_cast<int>(area.x_min), y0 = static_cast<int>(area.y_min);
  job.width = static_cast<int>(area.x_max) - x0;
  job.height = static_cast<int>(area.y_max) - y0;
  job.luma.resize(static_cast<std::size_t>(job.width) * job.height);
  for (int y = 0; y < job.height; ++y) {
    const std::uint8_t* row = f.data + static_cast<std::size_t>(y0 + y) * f.row_stride +
                              static_cast<std::size_t>(x0) * f.pixel_stride;
    std::uint8_t* out = job.luma.data() + static_cast<std::size_t>(y) * job.width;
    if (f.pixel_stride == 1) {
      std::copy(row, row + job.width, out);
    } else {
      for (int x = 0; x < job.width; ++x)
        out[x] = row[static_cast<std::size_t>(x) * f.pixel_stride];
    }
  }
  return job;
}

CodeRead read_job(const CodeReader& reader, const CodeJob& job) {
  const LumaView v{job.luma.data(), job.luma.size(), job.width, job.height, 1, job.width};
  CodeRead r = reader.read(v, std::nullopt);
  for (CodeResult& c : r.codes) {
    c.box.x_min += job.x0;
    c.box.x_max += job.x0;
    c.box.y_min += job.y0;
    c.box.y_max += job.y0;
  }
  return r;
}

CodeWorkers::CodeWorkers(unsigned threads, std::size_t max_pending, Read read)
    : read_(std::move(read)), max_pending_(std::max<std::size_t>(1, max_pending)) {
  for (unsigned i = 0; i < std::max(1u, threads); ++i) threads_.emplace_back([this] { run(); });
}

CodeWorkers::~CodeWorkers() {
  {
    std::lock_guard<std::mutex> g(lock_);
    stop_ = true;
    queue_.clear();
  }
  work_.notify_all();
  for (std::thread& t : threads_) t.join();
}

bool CodeWorkers::submit(CodeJob job) {
  {
    std::lock_guard<std::mutex> g(lock_);
    if (queue_.size() + running_.size() >= max_pending_) return false;
    queue_.push_back(std::move(job));
  }
  work_.notify_one();
  return true;
}

void CodeWorkers::run() {
  for (;;) {
    CodeJob job;
    {
      std::unique_lock<std::mutex> g(lock_);
      work_.wait(g, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      running_.push_back(job.id);
    }
    CodeJobDone d{job.id, {}};
    try {
      d.read = read_(job);
    } catch (const std::exception& e) {  // never out of a worker thread
      d.read.status = CodeReadStatus::kFailed;
      d.read.error = e.what();
    } catch (...) {
      d.read.status = CodeReadStatus::kFailed;
      d.read.error = "unknown error";
    }
    {
      std::lock_guard<std::mutex> g(lock_);
      running_.erase(std::find(running_.begin(), running_.end(), job.id));
      done_.push_back(std::move(d));
    }
    finished_.notify_all();
  }
}

bool CodeWorkers::all_done(const std::vector<std::uint64_t>& ids) const {
  for (std::uint64_t id : ids) {
    const bool queued =
        std::any_of(queue_.begin(), queue_.end(), [id](const CodeJob& j) { return j.id == id; });
    if (queued || std::find(running_.begin(), running_.end(), id) != running_.end()) return false;
  }
  return true;
}

std::vector<CodeJobDone> CodeWorkers::collect(const std::vector<std::uint64_t>& ids,
                                              Clock::time_point deadline) {
  std::unique_lock<std::mutex> g(lock_);
  finished_.wait_until(g, deadline, [&] { return all_done(ids); });
  std::vector<CodeJobDone> out;
  out.swap(done_);
  return out;
}

std::size_t CodeWorkers::pending() const {
  std::lock_guard<std::mutex> g(lock_);
  return queue_.size() + running_.size();
}

}  // namespace torchinfer
