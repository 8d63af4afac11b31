// The loader thread (see batch_loader.h).
#include "train/batch_loader.h"

#include <stdexcept>

namespace bertc::train {

BatchLoader::BatchLoader(std::function<LoadedBatch(int64_t)> make, int64_t first, int64_t last, size_t depth)
    : make_(std::move(make)), next_to_make_(first), last_(last), depth_(depth), thread_([this] { work(); }) {
  if (depth == 0) throw std::invalid_argument("a batch loader needs room for one batch at least");
}

BatchLoader::~BatchLoader() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void BatchLoader::work() {
  while (true) {
    int64_t micro = 0;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || ready_.size() < depth_; });
      if (stopping_) return;
      if (next_to_make_ >= last_) {
        finished_ = true;
        changed_.notify_all();
        return;
      }
      micro = next_to_make_++;
    }
    try {
      LoadedBatch b = make_(micro);  // outside the lock: this is the work that overlaps the step
      std::lock_guard lock(mutex_);
      ready_.push_back(std::move(b));
    } catch (...) {
      std::lock_guard lock(mutex_);
      failure_ = std::current_exception();
      changed_.notify_all();
      return;
    }
    changed_.notify_all();
  }
}

LoadedBatch BatchLoader::next() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return !ready_.empty() || failure_ || finished_; });
  if (ready_.empty()) {
    if (failure_) std::rethrow_exception(failure_);
    throw std::logic_error("the batch loader was asked for more batches than it was told to make");
  }
  LoadedBatch b = std::move(ready_.front());
  ready_.pop_front();
  lock.unlock();
  changed_.notify_all();
  return b;
}

}  // namespace bertc::train
