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
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "data/packed_examples.h"
#include "data/pretraining_data.h"
#include "data/row_packing.h"
#include "data/stop_check.h"

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
  // The rows of several examples shard s records (a shard bertc prepare-data made with [train]
  // packing = "pack"), known before anything trains; nullopt where it records none.
  virtual std::optional<RowsPlaced> recorded_rows(size_t) const { return std::nullopt; }
  // load(s), with the rows it records in `rows` (its rows empty where none).
  virtual PackedExamples load_with_rows(size_t shard, RowPlan& rows) const {
    rows = {};
    return load(shard);
  }
  // The shard in messages: its file, or which part of which text.
  virtual std::string name(size_t shard) const = 0;
  // What the shards hold, as a hash (hex): a checkpoint records it and --resume compares it (the
  // data's place may change, its content may not).
  virtual std::string content() const = 0;
};

// The rows of a shard's `examples` for `capacity`: those the shard records (`recorded`, from
// ShardSet::load_with_rows) where they fit it, else placed by pack_rows. Throws DataError for an
// example that alone does not fit.
std::vector<std::vector<size_t>> shard_rows(const PackedExamples& examples, RowPlan recorded, const RowCapacity& capacity);

// The sizes of the examples of up to `most_rows` rows of `set`'s first shard (in the set's order),
// spread evenly over its rows, row by row in layout order, placed for `capacity` as training
// places them: a sample read from one shard (what the cost figures of rows measure, without
// reading the rest).
std::vector<std::vector<ExampleSize>> first_shard_rows(const ShardSet& set, const RowCapacity& capacity,
                                                       int64_t most_rows);

// With `rows`, a shard's examples are placed into rows by pack_rows (data/row_packing.h: by their
// sizes alone, the same rows in every epoch and on every rank) — or, where the shard records rows
// placed for a capacity within `rows`, into those — and the rows, not the examples, are what the
// epochs shuffle: size() counts rows. Counting the rows of a shard that records none, or rows for
// a larger capacity, reads it once before anything trains (`progress` hears how far it got and
// why; `stop` is asked between shards: Stopped).
class ShardedExamples : public ExampleSource {
 public:
  ShardedExamples(std::shared_ptr<const ShardSet> shards, uint64_t seed, std::optional<RowCapacity> rows = std::nullopt,
                  const std::function<void(const std::string&)>& progress = {}, const StopCheck& stop = {});
  ~ShardedExamples() override;
  int64_t size() const override { return total_; }
  int64_t shards() const override { return static_cast<int64_t>(counts_.size()); }
  int64_t examples_per_row() const override { return rows_ ? rows_->examples : 0; }
  // Throws std::logic_error when the source places examples into rows: ask row().
  Example example(int64_t index) const override;
  std::vector<Example> row(int64_t index) const override;
  std::string content() const override { return set_->content(); }
  // The shards in memory now, the one read ahead included (at most 2).
  size_t shards_in_memory() const;
  const ShardSet& shard_set() const { return *set_; }

 private:
  struct Shard {
    PackedExamples examples;
    std::vector<std::vector<size_t>> rows;  // (with rows_ only)
  };
  using Loaded = std::shared_ptr<const Shard>;
  struct Epoch {
    int64_t number = -1;
    std::vector<size_t> order;    // shard indices
    std::vector<int64_t> starts;  // the first example of each, within the epoch
  };
  const Epoch& epoch(int64_t e) const;
  Loaded load(size_t shard) const;
  // The rows of shard `shard` (with rows_): as it records them where they fit, else counted by
  // reading it (`said_unfit`: whether the records that do not fit were said already).
  int64_t count_rows(size_t shard, bool& said_unfit, const std::function<void(const std::string&)>& progress,
                     const StopCheck& stop) const;
  // The shard holding `index` of the sequence, in memory, and its unit (example or row) there.
  std::pair<Loaded, size_t> locate(int64_t index) const;

  std::shared_ptr<const ShardSet> set_;
  std::vector<int64_t> counts_;
  int64_t total_ = 0;
  uint64_t seed_;
  std::optional<RowCapacity> rows_;
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
