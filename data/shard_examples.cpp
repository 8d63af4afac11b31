// Examples of a folder of shards, a shard at a time (see shard_examples.h).
#include "data/shard_examples.h"

#include <algorithm>

#include <fmt/format.h>

#include "data/hdf5_shard.h"
#include "data/vocab.h"

namespace bertc::data {
namespace {

uint64_t mix(uint64_t seed, uint64_t a, uint64_t b) {
  return seed ^ (0x9E3779B97F4A7C15ull * (a + 1)) ^ (0xC2B2AE3D27D4EB4Full * (b + 1));
}

}  // namespace

ShardExamples::ShardExamples(std::vector<std::filesystem::path> files, int64_t seq_len, int64_t predictions,
                             int64_t vocab_size, int64_t type_vocab_size, uint64_t seed)
    : files_(std::move(files)), vocab_size_(vocab_size), type_vocab_size_(type_vocab_size), seed_(seed) {
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
    total_ += s.examples;
  }
}

ShardExamples::~ShardExamples() {
  if (ahead_data_.valid()) ahead_data_.wait();
}

const ShardExamples::Epoch& ShardExamples::epoch(int64_t e) const {
  Epoch& ep = epochs_[e % 2];
  if (ep.number != e) {
    ep.number = e;
    ep.order.resize(files_.size());
    for (size_t i = 0; i < ep.order.size(); ++i) ep.order[i] = i;
    Rng rng(mix(seed_, static_cast<uint64_t>(e), ~uint64_t{0}));
    rng.shuffle(ep.order);
    ep.starts.assign(1, 0);
    for (size_t s : ep.order) ep.starts.push_back(ep.starts.back() + counts_[s]);
  }
  return ep;
}

ShardExamples::Loaded ShardExamples::load(size_t shard) const {
  auto examples = std::make_shared<std::vector<Example>>(read_shard(files_[shard]));
  const std::string where = files_[shard].string();
  if (static_cast<int64_t>(examples->size()) != counts_[shard])
    throw DataError(fmt::format("{}: held {} examples when training started and holds {} now: a shard changed under a "
                                "run (restore it, or start a new run)",
                                where, counts_[shard], examples->size()));
  for (size_t e = 0; e < examples->size(); ++e) {
    const Example& ex = (*examples)[e];
    for (int64_t id : ex.tokens)
      if (id < 0 || id >= vocab_size_)
        throw DataError(fmt::format("{}: dataset 'input_ids', example {}: token {} is not below [model] vocab_size {} "
                                    "(shards of another vocabulary?)",
                                    where, e, id, vocab_size_));
    for (int64_t segment : ex.segment_ids)
      if (segment < 0 || segment >= type_vocab_size_)
        throw DataError(fmt::format("{}: dataset 'segment_ids', example {}: segment {} is not below [model] "
                                    "type_vocab_size {}",
                                    where, e, segment, type_vocab_size_));
    for (int64_t id : ex.masked_labels)
      if (id < 0 || id >= vocab_size_)
        throw DataError(fmt::format("{}: dataset 'masked_lm_ids', example {}: token {} is not below [model] vocab_size "
                                    "{} (shards of another vocabulary?)",
                                    where, e, id, vocab_size_));
  }
  return examples;
}

Example ShardExamples::example(int64_t index) const {
  std::lock_guard lock(mutex_);
  const int64_t e = index / total_, at = index % total_;
  const Epoch& ep = epoch(e);
  const size_t k = static_cast<size_t>(std::upper_bound(ep.starts.begin(), ep.starts.end(), at) - ep.starts.begin()) - 1;
  const size_t shard = ep.order[k];
  if (shard != current_ || e != current_epoch_) {
    Loaded data;
    if (shard == current_) {
      data = current_data_;  // the last shard of one epoch is the first of the next
    } else if (shard == ahead_) {
      ahead_ = SIZE_MAX;
      data = ahead_data_.get();  // (rethrows what reading it threw; the future is spent either way)
    } else {
      if (ahead_data_.valid()) ahead_data_.wait();  // (a jump: what was read ahead is not needed)
      ahead_data_ = {};
      ahead_ = SIZE_MAX;
      current_data_.reset();  // (two shards at most, even on a jump)
      data = load(shard);
    }
    current_data_ = std::move(data);
    current_ = shard;
    current_epoch_ = e;
    current_order_.resize(static_cast<size_t>(counts_[shard]));
    for (size_t i = 0; i < current_order_.size(); ++i) current_order_[i] = i;
    Rng rng(mix(seed_, static_cast<uint64_t>(e), shard));
    rng.shuffle(current_order_);
    // The next shard of the sequence is read while this one trains.
    const size_t next = k + 1 < ep.order.size() ? ep.order[k + 1] : epoch(e + 1).order.front();
    if (next != shard && ahead_ == SIZE_MAX) {
      ahead_data_ = std::async(std::launch::async, [this, next] { return load(next); });
      ahead_ = next;  // (only once the read is under way)
    }
  }
  return (*current_data_)[current_order_[static_cast<size_t>(at - ep.starts[k])]];
}

size_t ShardExamples::shards_in_memory() const {
  std::lock_guard lock(mutex_);
  return (current_data_ ? 1 : 0) + (ahead_ != SIZE_MAX ? 1 : 0);
}

}  // namespace bertc::data
