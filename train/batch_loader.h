// A loader thread that makes the next micro-batches (tokens masked, tensors bound) while the
// device runs the current one, at most `depth` ahead (double-buffered by default), in order.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "data/pretraining_data.h"
#include "support/tensor_io.h"

namespace bertc::train {

struct LoadedBatch {
  int64_t micro_batch = 0;
  data::Batch batch;
  support::Environment inputs;  // the batch as the graph's inputs (bind_batch)
};

class BatchLoader {
 public:
  // Starts a thread calling make(first), make(first + 1), ... up to make(last - 1).
  BatchLoader(std::function<LoadedBatch(int64_t)> make, int64_t first, int64_t last, size_t depth = 2);
  ~BatchLoader();  // stops the thread (an unfinished stream is fine)
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // The next micro-batch, waiting for it if the thread is behind; rethrows what make threw.
  LoadedBatch next();

 private:
  void work();

  std::function<LoadedBatch(int64_t)> make_;
  int64_t next_to_make_, last_;
  size_t depth_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<LoadedBatch> ready_;
  std::exception_ptr failure_;
  bool stopping_ = false, finished_ = false;  // finished: every batch was made
  std::thread thread_;  // last: starts once everything above is set
};

}  // namespace bertc::train
