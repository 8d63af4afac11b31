// Examples of a set of shards, a shard at a time (see shard_examples.h).
#include "data/shard_examples.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include <fmt/format.h>

namespace bertc::data {
namespace {

uint64_t mix(uint64_t seed, uint64_t a, uint64_t b) {
  return seed ^ (0x9E3779B97F4A7C15ull * (a + 1)) ^ (0xC2B2AE3D27D4EB4Full * (b + 1));
}

ExampleSize size_of(const PackedExamples& examples, size_t i) {
  return {static_cast<int64_t>(examples.tokens_of(i)), static_cast<int64_t>(examples.predictions_of(i))};
}

}  // namespace

std::vector<std::vector<size_t>> shard_rows(const PackedExamples& examples, RowPlan recorded, const RowCapacity& capacity) {
  if (!recorded.rows.empty() && fits_within(recorded.capacity, capacity)) return std::move(recorded.rows);
  std::vector<ExampleSize> sizes(examples.size());
  for (size_t i = 0; i < sizes.size(); ++i) sizes[i] = size_of(examples, i);
  try {
    return pack_rows(sizes, capacity);
  } catch (const std::invalid_argument& e) {
    throw DataError(fmt::format("placing examples into rows: {}", e.what()));
  }
}

std::vector<std::vector<ExampleSize>> first_shard_rows(const ShardSet& set, const RowCapacity& capacity,
                                                       int64_t most_rows) {
  if (set.shards() == 0) throw DataError("no shards to measure rows on");
  RowPlan recorded;
  const PackedExamples examples = set.load_with_rows(0, recorded);
  const std::vector<std::vector<size_t>> rows = shard_rows(examples, std::move(recorded), capacity);
  // (rows spread evenly over the shard's: its rows come in the order of their first example, and
  // the fullest, of the longest examples, are not the first)
  const auto n = static_cast<int64_t>(rows.size()), taken = std::min(n, most_rows);
  std::vector<std::vector<ExampleSize>> out;
  for (int64_t k = 0; k < taken; ++k) {
    std::vector<ExampleSize>& sizes = out.emplace_back();
    for (size_t i : rows[static_cast<size_t>(k * n / taken)]) sizes.push_back(size_of(examples, i));
  }
  return out;
}

ShardedExamples::ShardedExamples(std::shared_ptr<const ShardSet> shards, uint64_t seed, std::optional<RowCapacity> rows,
                                 const std::function<void(const std::string&)>& progress, const StopCheck& stop)
    : set_(std::move(shards)), seed_(seed), rows_(rows) {
  if (set_->shards() == 0) throw DataError("no shards to train on");
  auto said = std::chrono::steady_clock::now();
  bool said_unfit = false;
  for (size_t s = 0; s < set_->shards(); ++s) {
    counts_.push_back(rows_ ? count_rows(s, said_unfit, progress, stop) : set_->examples(s));
    total_ += counts_.back();
    if (const auto now = std::chrono::steady_clock::now(); rows_ && progress && now - said > std::chrono::seconds(10)) {
      progress(fmt::format("placing examples into rows: {} of {} shards", s + 1, set_->shards()));
      said = now;
    }
  }
  if (total_ == 0) throw DataError("no training examples");
}

int64_t ShardedExamples::count_rows(size_t shard, bool& said_unfit, const std::function<void(const std::string&)>& progress,
                                    const StopCheck& stop) const {
  const auto recorded = set_->recorded_rows(shard);
  if (recorded && fits_within(recorded->capacity, *rows_)) return recorded->count;  // (as prepare-data placed them)
  // (else a shard's rows follow from its examples' sizes: it is read to count them)
  if (recorded && progress && !said_unfit) {
    said_unfit = true;
    progress(fmt::format("{} records rows of up to {} examples, {} tokens and {} predictions, which do not fit this "
                         "run's {}, {} and {}: the examples are placed again (each shard read once now)",
                         set_->name(shard), recorded->capacity.examples, recorded->capacity.tokens,
                         recorded->capacity.predictions, rows_->examples, rows_->tokens, rows_->predictions));
  }
  if (const int signal = stop_asked(stop))
    throw Stopped(signal, fmt::format("while placing the examples of {} shards into rows ({} done)", set_->shards(), shard));
  return static_cast<int64_t>(shard_rows(set_->load(shard), {}, *rows_).size());
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
  RowPlan recorded;
  Shard loaded{rows_ ? set_->load_with_rows(shard, recorded) : set_->load(shard), {}};
  if (rows_) loaded.rows = shard_rows(loaded.examples, std::move(recorded), *rows_);
  const int64_t units = static_cast<int64_t>(rows_ ? loaded.rows.size() : loaded.examples.size());
  if (units != counts_[shard])
    throw DataError(fmt::format("{}: held {} {} when training started and holds {} now: a shard changed under a "
                                "run (restore it, or start a new run)",
                                set_->name(shard), counts_[shard], rows_ ? "rows of examples" : "examples", units));
  return std::make_shared<const Shard>(std::move(loaded));
}

Example ShardedExamples::example(int64_t index) const {
  if (rows_) throw std::logic_error("ShardedExamples::example on a source of rows: ask row()");
  const auto [data, unit] = locate(index);
  return data->examples[unit];
}

std::vector<Example> ShardedExamples::row(int64_t index) const {
  if (!rows_) return {example(index)};
  const auto [data, unit] = locate(index);
  std::vector<Example> out;
  for (size_t i : data->rows[unit]) out.push_back(data->examples[i]);
  return out;
}

std::pair<ShardedExamples::Loaded, size_t> ShardedExamples::locate(int64_t index) const {
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
  return {current_data_, current_order_[static_cast<size_t>(at - ep.starts[k])]};
}

size_t ShardedExamples::shards_in_memory() const {
  std::lock_guard lock(mutex_);
  return (current_data_ ? 1 : 0) + (ahead_ != SIZE_MAX ? 1 : 0);
}

}  // namespace bertc::data
