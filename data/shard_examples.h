// Training examples a shard at a time, from any set of shards (HDF5 files: data/shard_files.h;
// text made into examples in memory: data/text_shards.h): epoch e takes the shards in an order
// shuffled by (seed, e) and each shard's examples in an order shuffled by (seed, e, shard), as
// NVIDIA's BERT loader orders them. Unlike NVIDIA's loader, which gives rank r every world-th
// shard, every rank reads the same sequence and the trainer deals its micro-batches round the
// ranks: the examples of a global batch, and a resumed run, then do not depend on the number of
// ranks (each rank reads every shard). Memory holds two shards at most: the one in use and the
// next, read ahead on a thread of its own — and, while the next is read or made, what that takes
// beside it (an HDF5 shard's padded arrays; a text shard's examples before they are shuffled).
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "data/packed_examples.h"
#include "data/pretraining_data.h"

namespace bertc::data {

// Where ShardedExamples' shards come from. examples(s) is known before anything trains; load(s)
// makes or reads shard s, from the loader thread or a read-ahead's: it must be safe to call from
// several threads at once (both sets are immutable once made).
class ShardSet {
 public:
  virtual ~ShardSet() = default;
  virtual size_t shards() const = 0;
  virtual int64_t examples(size_t shard) const = 0;
  virtual PackedExamples load(size_t shard) const = 0;
  // The shard in messages: its file, or which part of which text.
  virtual std::string name(size_t shard) const = 0;
  // What the shards hold, as a hash (hex): a checkpoint records it and --resume compares it (the
  // data's place may change, its content may not).
  virtual std::string content() const = 0;
};

class ShardedExamples : public ExampleSource {
 public:
  ShardedExamples(std::shared_ptr<const ShardSet> shards, uint64_t seed);
  ~ShardedExamples() override;
  int64_t size() const override { return total_; }
  int64_t shards() const override { return static_cast<int64_t>(counts_.size()); }
  Example example(int64_t index) const override;
  std::string content() const override { return set_->content(); }
  // The shards in memory now, the one read ahead included (at most 2).
  size_t shards_in_memory() const;
  const ShardSet& shard_set() const { return *set_; }

 private:
  using Loaded = std::shared_ptr<const PackedExamples>;
  struct Epoch {
    int64_t number = -1;
    std::vector<size_t> order;    // shard indices
    std::vector<int64_t> starts;  // the first example of each, within the epoch
  };
  const Epoch& epoch(int64_t e) const;
  Loaded load(size_t shard) const;

  std::shared_ptr<const ShardSet> set_;
  std::vector<int64_t> counts_;
  int64_t total_ = 0;
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
