// The loader thread: micro-batches come out in order, made at most `depth` ahead of use, its
// failures reach the trainer with their message, and stopping mid-stream neither hangs nor leaks.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "train/batch_loader.h"

namespace bertc::train {

using namespace bertc::support;
namespace {

LoadedBatch numbered(int64_t micro) {
  LoadedBatch b;
  b.micro_batch = micro;
  b.batch.next_sentence_labels = {micro};
  return b;
}

TEST(BatchLoader, GivesEveryMicroBatchInOrder) {
  BatchLoader loader(numbered, 5, 25);
  for (int64_t m = 5; m < 25; ++m) {
    const LoadedBatch b = loader.next();
    EXPECT_EQ(b.micro_batch, m);
    EXPECT_EQ(b.batch.next_sentence_labels.at(0), m);
  }
  EXPECT_THROW(loader.next(), std::logic_error);  // asked for more than the run holds
}

TEST(BatchLoader, MakesAtMostDepthBatchesAheadOfUse) {
  std::atomic<int64_t> made{0};
  BatchLoader loader([&](int64_t m) { ++made; return numbered(m); }, 0, 100, 2);
  for (int64_t used = 0; used < 10; ++used) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the thread has time to run ahead
    // Two waiting in the queue, plus one being made may have been counted: never more.
    EXPECT_LE(made.load(), used + 3);
    EXPECT_GE(made.load(), used + 1);
    loader.next();
  }
}

TEST(BatchLoader, PassesOnWhatMakingABatchThrew) {
  BatchLoader loader([](int64_t m) -> LoadedBatch {
    if (m == 3) throw std::runtime_error("data.txt: line 7 is not UTF-8");
    return numbered(m);
  }, 0, 10);
  for (int64_t m = 0; m < 3; ++m) EXPECT_EQ(loader.next().micro_batch, m);
  try {
    loader.next();
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "data.txt: line 7 is not UTF-8");
  }
}

TEST(BatchLoader, StopsMidStreamWithoutHanging) {
  auto loader = std::make_unique<BatchLoader>(numbered, 0, 1'000'000);
  loader->next();
  loader.reset();  // joins a thread blocked on a full queue; a hang fails the test by ctest's timeout
}

}  // namespace
}  // namespace bertc::train
