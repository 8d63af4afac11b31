// Examples of a set of shards, a shard at a time (see shard_examples.h).
#include "data/shard_examples.h"

#include <algorithm>

#include <fmt/format.h>

namespace bertc::data {
namespace {

uint64_t mix(uint64_t seed, uint64_t a, uint64_t b) {
  return seed ^ (0x9E3779B97F4A7C15ull * (a + 1)) ^ (0xC2B2AE3D27D4EB4Full * (b + 1));
}

}  // namespace

ShardedExamples::ShardedExamples(std::shared_ptr<const ShardSet> shards, uint64_t seed)
    : set_(std::move(shards)), seed_(seed) {
  if (set_->shards() == 0) throw DataError("no shards to train on");
  for (size_t s = 0; s < set_->shards(); ++s) {
    counts_.push_back(set_->examples(s));
    total_ += counts_.back();
  }
  if (total_ == 0) throw DataError("no training examples");
}

ShardedExamples::~ShardedExamples() {
  if (ahead_data_.valid()) ahead_data_.wait();
}

const ShardedExamples::Epoch& ShardedExamples::epoch(int64_t e) const {
  Epoch& ep = epochs_[e % 2];
  if (ep.number != e) {
    ep.number = e;
    ep.order.resize(counts_.size());
    for (size_t i = 0; i < ep.order.size(); ++i) ep.order[i] = i;
    Rng rng(mix(seed_, static_cast<uint64_t>(e), ~uint64_t{0}));
    rng.shuffle(ep.order);
    ep.starts.assign(1, 0);
    for (size_t s : ep.order) ep.starts.push_back(ep.starts.back() + counts_[s]);
  }
  return ep;
}

ShardedExamples::Loaded ShardedExamples::load(size_t shard) const {
  auto examples = std::make_shared<const PackedExamples>(set_->load(shard));
  if (static_cast<int64_t>(examples->size()) != counts_[shard])
    throw DataError(fmt::format("{}: held {} examples when training started and holds {} now: a shard changed under a "
                                "run (restore it, or start a new run)",
                                set_->name(shard), counts_[shard], examples->size()));
  return examples;
}

Example ShardedExamples::example(int64_t index) const {
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
      current_ = SIZE_MAX;    // (nothing is current if the load throws)
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

size_t ShardedExamples::shards_in_memory() const {
  std::lock_guard lock(mutex_);
  return (current_data_ ? 1 : 0) + (ahead_ != SIZE_MAX ? 1 : 0);
}

}  // namespace bertc::data
