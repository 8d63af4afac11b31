// HDF5 shard files (data/hdf5_shard.h) as a ShardedExamples' shard set.
#pragma once

#include <filesystem>
#include <vector>

#include "data/shard_examples.h"

namespace bertc::data {

class ShardFiles : public ShardSet {
 public:
  // Checks every shard before anything trains (DataError naming the file and dataset, or the config
  // key to change): readable, complete, and of seq_len tokens and `predictions` predictions.
  // Token ids at or above vocab_size, and segments at or above type_vocab_size, are refused when
  // their shard is read.
  ShardFiles(std::vector<std::filesystem::path> files, int64_t seq_len, int64_t predictions, int64_t vocab_size,
             int64_t type_vocab_size);
  size_t shards() const override { return files_.size(); }
  int64_t examples(size_t shard) const override { return counts_[shard]; }
  PackedExamples load(size_t shard) const override;
  std::string name(size_t shard) const override { return files_[shard].string(); }

 private:
  std::vector<std::filesystem::path> files_;
  std::vector<int64_t> counts_;
  int64_t vocab_size_, type_vocab_size_;
};

}  // namespace bertc::data
