// Examples packed into flat arrays (see packed_examples.h).
#include "data/packed_examples.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

namespace bertc::data {
namespace {

template <typename Narrow>
Narrow narrowed(int64_t v, const char* what) {
  if (v < std::numeric_limits<Narrow>::min() || v > std::numeric_limits<Narrow>::max())
    throw DataError(fmt::format("an example's {} {} does not fit the packed form ({} to {})", what, v,
                                int64_t{std::numeric_limits<Narrow>::min()}, int64_t{std::numeric_limits<Narrow>::max()}));
  return static_cast<Narrow>(v);
}

}  // namespace

PackedExamples::PackedExamples() : token_starts_{0}, prediction_starts_{0} {}

void PackedExamples::push_back(const Example& ex) {
  if (ex.segment_ids.size() != ex.tokens.size() || ex.masked_labels.size() != ex.masked_positions.size())
    throw DataError("an example's tokens and segments, or positions and labels, differ in number");
  // Checked whole before anything is appended: a refused example leaves the set as it was.
  for (size_t i = 0; i < ex.tokens.size(); ++i) {
    narrowed<int32_t>(ex.tokens[i], "token");
    narrowed<int8_t>(ex.segment_ids[i], "segment");
  }
  for (size_t i = 0; i < ex.masked_positions.size(); ++i) {
    narrowed<int32_t>(ex.masked_positions[i], "masked position");
    narrowed<int32_t>(ex.masked_labels[i], "masked label");
  }
  for (size_t i = 0; i < ex.tokens.size(); ++i) {
    tokens_.push_back(static_cast<int32_t>(ex.tokens[i]));
    segments_.push_back(static_cast<int8_t>(ex.segment_ids[i]));
  }
  for (size_t i = 0; i < ex.masked_positions.size(); ++i) {
    positions_.push_back(static_cast<int32_t>(ex.masked_positions[i]));
    labels_.push_back(static_cast<int32_t>(ex.masked_labels[i]));
  }
  random_next_.push_back(ex.is_random_next ? 1 : 0);
  token_starts_.push_back(tokens_.size());
  prediction_starts_.push_back(positions_.size());
}

void PackedExamples::reserve(size_t examples, size_t tokens, size_t predictions) {
  tokens_.reserve(tokens), segments_.reserve(tokens), positions_.reserve(predictions), labels_.reserve(predictions);
  random_next_.reserve(examples), token_starts_.reserve(examples + 1), prediction_starts_.reserve(examples + 1);
}

size_t PackedExamples::example_of_token(size_t i) const {
  return static_cast<size_t>(std::upper_bound(token_starts_.begin(), token_starts_.end(), i) - token_starts_.begin()) - 1;
}

size_t PackedExamples::example_of_prediction(size_t i) const {
  return static_cast<size_t>(std::upper_bound(prediction_starts_.begin(), prediction_starts_.end(), i) -
                             prediction_starts_.begin()) - 1;
}

Example PackedExamples::operator[](size_t e) const {
  Example ex;
  const size_t t0 = token_starts_[e], t1 = token_starts_[e + 1];
  const size_t p0 = prediction_starts_[e], p1 = prediction_starts_[e + 1];
  ex.tokens.assign(tokens_.begin() + t0, tokens_.begin() + t1);
  ex.segment_ids.assign(segments_.begin() + t0, segments_.begin() + t1);
  ex.masked_positions.assign(positions_.begin() + p0, positions_.begin() + p1);
  ex.masked_labels.assign(labels_.begin() + p0, labels_.begin() + p1);
  ex.is_random_next = random_next_[e] != 0;
  return ex;
}

PackedExamples PackedExamples::reordered(const std::vector<size_t>& order) const {
  PackedExamples out;
  out.reserve(order.size(), tokens_.size(), positions_.size());
  for (size_t e : order) {
    const size_t t0 = token_starts_[e], t1 = token_starts_[e + 1];
    const size_t p0 = prediction_starts_[e], p1 = prediction_starts_[e + 1];
    out.tokens_.insert(out.tokens_.end(), tokens_.begin() + t0, tokens_.begin() + t1);
    out.segments_.insert(out.segments_.end(), segments_.begin() + t0, segments_.begin() + t1);
    out.positions_.insert(out.positions_.end(), positions_.begin() + p0, positions_.begin() + p1);
    out.labels_.insert(out.labels_.end(), labels_.begin() + p0, labels_.begin() + p1);
    out.random_next_.push_back(random_next_[e]);
    out.token_starts_.push_back(out.tokens_.size());
    out.prediction_starts_.push_back(out.positions_.size());
  }
  return out;
}

uint64_t PackedExamples::bytes() const {
  return tokens_.capacity() * 4 + positions_.capacity() * 4 + labels_.capacity() * 4 + segments_.capacity() +
         random_next_.capacity() + (token_starts_.capacity() + prediction_starts_.capacity()) * 8;
}

void PackedExamples::shrink_to_fit() {
  tokens_.shrink_to_fit(), positions_.shrink_to_fit(), labels_.shrink_to_fit(), segments_.shrink_to_fit();
  random_next_.shrink_to_fit(), token_starts_.shrink_to_fit(), prediction_starts_.shrink_to_fit();
}

PackedExamples pack_examples(const std::vector<Example>& examples) {
  PackedExamples packed;
  for (const Example& ex : examples) packed.push_back(ex);
  packed.shrink_to_fit();
  return packed;
}

}  // namespace bertc::data
