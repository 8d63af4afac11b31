// HDF5 shard files (data/hdf5_shard.h) as a ShardedExamples' shard set.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "data/hdf5_shard.h"
#include "data/shard_examples.h"
#include "data/stop_check.h"
#include "data/vocab_identity.h"

namespace bertc::data {

// What a run's shards must have been made with beyond their shapes, as shards record it
// (ShardRecord): the run's vocabulary and the config's masking and lower-casing.
struct ShardExpectation {
  VocabRecord vocab;
  double masked_lm_prob = 0.15;
  bool do_lower_case = true;
};

class ShardFiles : public ShardSet {
 public:
  // Checks every shard before anything trains, in seconds (DataError naming the file and dataset,
  // or the config key to change): readable, complete, of seq_len tokens and `predictions`
  // predictions, and — for a shard that records them — of the run's vocabulary (`expected`), its
  // largest token id below vocab_size, made with the config's masked_lm_prob and do_lower_case.
  // Token ids are held below the run's vocabulary's size where `expected` gives it (an id past its
  // last token, though below a padded vocab_size, is of another vocabulary's), and a recorded
  // shard's ids at or below its recorded largest (more is a damaged shard: data or record edited).
  // A shard without a record (NVIDIA's) has its token ids and segments read and checked here, a
  // block at a time (minutes for a large set: `progress` hears how far it got, and `stop` is asked
  // between blocks: Stopped). Each shard is checked again when it is read.
  ShardFiles(std::vector<std::filesystem::path> files, int64_t seq_len, int64_t predictions, int64_t vocab_size,
             int64_t type_vocab_size, const std::optional<ShardExpectation>& expected = std::nullopt,
             const std::function<void(const std::string&)>& progress = {}, const StopCheck& stop = {});
  size_t shards() const override { return files_.size(); }
  int64_t examples(size_t shard) const override { return counts_[shard]; }
  PackedExamples load(size_t shard) const override;
  std::optional<RowsPlaced> recorded_rows(size_t shard) const override { return rows_[shard]; }
  PackedExamples load_with_rows(size_t shard, RowPlan& rows) const override;
  std::string name(size_t shard) const override { return files_[shard].string(); }
  // Each shard's checksum (its .xxh3), or its size where it has none (hashing a whole set of
  // foreign shards would take minutes), in order.
  std::string content() const override { return content_; }
  // What is worth saying of the shards before training (shards without a checksum).
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  // Reads the unrecorded shards' ids and segments (first_value_outside): DataError for the first
  // value outside the model's.
  // Reads whole, before the first step, the `count` shards prepare-data made that have no .xxh3
  // beside them (nothing checked their bytes), so that damage is found now; DataError names it.
  void read_unchecked(const std::vector<ShardShape>& shapes, size_t count,
                      const std::function<void(const std::string&)>& progress, const StopCheck& stop);
  void check_unrecorded(const std::vector<ShardShape>& shapes, const std::function<void(const std::string&)>& progress,
                        const StopCheck& stop);
  std::string outside_message(const std::string& where, const ShardValue& value) const;
  // DataError for a token id (input_ids or masked_lm_ids) shard `shard` may not hold.
  void check_token(size_t shard, const char* dataset, int64_t example, int64_t token) const;

  std::vector<std::filesystem::path> files_;
  std::vector<int64_t> counts_;
  std::vector<std::optional<RowsPlaced>> rows_;  // each shard's rows of several examples, where it records them
  int64_t vocab_size_, type_vocab_size_;
  int64_t token_bound_;                         // ids are below it: vocab_size, or the run's vocabulary's size
  std::optional<VocabRecord> run_vocab_;        // the run's vocabulary, where known
  std::vector<std::optional<int64_t>> recorded_max_;  // each shard's recorded largest token id
  std::vector<std::string> notes_;
  std::string content_;
};

}  // namespace bertc::data
