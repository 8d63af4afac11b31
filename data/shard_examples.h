// Training examples from a folder of HDF5 shards (data/hdf5_shard.h), read a shard at a time:
// epoch e takes the shards in an order shuffled by (seed, e) and each shard's examples in an order
// shuffled by (seed, e, shard), as NVIDIA's BERT loader orders them. Unlike NVIDIA's loader, which
// gives rank r every world-th shard, every rank reads the same sequence and the trainer deals its
// micro-batches round the ranks: the examples of a global batch, and a resumed run, then do not
// depend on the number of ranks (each rank reads every shard; its memory holds two at most: the
// one in use and the next, read ahead on a thread of its own — while a shard is read, its padded
// arrays and its examples are both in memory).
#pragma once

#include <cstdint>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <vector>

#include "data/pretraining_data.h"

namespace bertc::data {

class ShardExamples : public ExampleSource {
 public:
  // Checks every shard before anything trains (DataError naming the file and dataset, or the config
  // key to change): readable, complete, and of seq_len tokens and `predictions` predictions.
  // Token ids at or above vocab_size, and segments at or above type_vocab_size, are refused when
  // their shard is read.
  ShardExamples(std::vector<std::filesystem::path> files, int64_t seq_len, int64_t predictions, int64_t vocab_size,
                int64_t type_vocab_size, uint64_t seed);
  ~ShardExamples() override;
  int64_t size() const override { return total_; }
  Example example(int64_t index) const override;
  // The shards in memory now, the one read ahead included (at most 2).
  size_t shards_in_memory() const;

 private:
  using Loaded = std::shared_ptr<const std::vector<Example>>;
  struct Epoch {
    int64_t number = -1;
    std::vector<size_t> order;    // shard indices
    std::vector<int64_t> starts;  // the first example of each, within the epoch
  };
  const Epoch& epoch(int64_t e) const;
  Loaded load(size_t shard) const;

  std::vector<std::filesystem::path> files_;
  std::vector<int64_t> counts_;
  int64_t total_ = 0, vocab_size_, type_vocab_size_;
  uint64_t seed_;
  mutable std::mutex mutex_;
  mutable Epoch epochs_[2];  // the current epoch and the next (the read-ahead's), by parity
  mutable size_t current_ = SIZE_MAX;
  mutable Loaded current_data_;
  mutable std::vector<size_t> current_order_;
  mutable int64_t current_epoch_ = -1;
  mutable size_t ahead_ = SIZE_MAX;
  mutable std::future<Loaded> ahead_data_;
};

}  // namespace bertc::data
