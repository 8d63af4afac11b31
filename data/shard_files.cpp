// HDF5 shards checked against the config, read whole when their turn comes (see shard_files.h).
#include "data/shard_files.h"

#include <fmt/format.h>

#include "data/hdf5_shard.h"

namespace bertc::data {

ShardFiles::ShardFiles(std::vector<std::filesystem::path> files, int64_t seq_len, int64_t predictions,
                       int64_t vocab_size, int64_t type_vocab_size)
    : files_(std::move(files)), vocab_size_(vocab_size), type_vocab_size_(type_vocab_size) {
  if (files_.empty()) throw DataError("no shards to train on");
  for (const auto& f : files_) {
    const ShardShape s = read_shard_shape(f);
    if (s.seq_len != seq_len)
      throw DataError(fmt::format("{}: its examples are of {} tokens, and [train] seq_len is {}: set seq_len = {} (or "
                                  "prepare shards of {})",
                                  f.string(), s.seq_len, seq_len, s.seq_len, seq_len));
    if (s.predictions != predictions)
      throw DataError(fmt::format("{}: its examples have {} predictions, and [train] max_predictions_per_seq is {}: "
                                  "set max_predictions_per_seq = {}",
                                  f.string(), s.predictions, predictions, s.predictions));
    if (s.examples == 0) throw DataError(fmt::format("{}: the shard holds no examples", f.string()));
    counts_.push_back(s.examples);
  }
}

PackedExamples ShardFiles::load(size_t shard) const {
  PackedExamples examples = read_shard(files_[shard]);
  const std::string where = files_[shard].string();
  // Scanned flat; only a refusal looks for the example.
  const std::vector<int32_t>& tokens = examples.all_tokens();
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= vocab_size_)
      throw DataError(fmt::format("{}: dataset 'input_ids', example {}: token {} is not below [model] vocab_size {} "
                                  "(shards of another vocabulary?)",
                                  where, examples.example_of_token(i), tokens[i], vocab_size_));
  const std::vector<int8_t>& segments = examples.all_segments();
  for (size_t i = 0; i < segments.size(); ++i)
    if (segments[i] < 0 || segments[i] >= type_vocab_size_)
      throw DataError(fmt::format("{}: dataset 'segment_ids', example {}: segment {} is not below [model] "
                                  "type_vocab_size {}",
                                  where, examples.example_of_token(i), int{segments[i]}, type_vocab_size_));
  const std::vector<int32_t>& labels = examples.all_labels();
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] < 0 || labels[i] >= vocab_size_)
      throw DataError(fmt::format("{}: dataset 'masked_lm_ids', example {}: token {} is not below [model] vocab_size "
                                  "{} (shards of another vocabulary?)",
                                  where, examples.example_of_prediction(i), labels[i], vocab_size_));
  return examples;
}

}  // namespace bertc::data
