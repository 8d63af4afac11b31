// Pretraining examples in a compact form for the shards a trainer holds: every example's tokens
// (int32) and segments (int8) in one array each, its predictions (int32 positions and labels) in
// two more, offsets between them. About 5 bytes a token and 8 a prediction, against some 16 a
// token, 16 a prediction and a few hundred bytes of vector headers and allocations an Example.
#pragma once

#include <cstdint>
#include <vector>

#include "data/pretraining_data.h"

namespace bertc::data {

class PackedExamples {
 public:
  PackedExamples();
  // Throws DataError (and holds what it held) for a token, label or position outside int32, or a
  // segment outside -128..127.
  void push_back(const Example& example);
  void reserve(size_t examples, size_t tokens, size_t predictions);
  size_t size() const { return random_next_.size(); }
  Example operator[](size_t index) const;
  // Example `index`'s tokens and masked positions, counted without making the example.
  size_t tokens_of(size_t index) const { return token_starts_[index + 1] - token_starts_[index]; }
  size_t predictions_of(size_t index) const { return prediction_starts_[index + 1] - prediction_starts_[index]; }
  // Example order[i] of this set as example i.
  PackedExamples reordered(const std::vector<size_t>& order) const;
  // Every example's tokens, segments and masked labels one after another, and the example that
  // holds token (or prediction) i: what a range check scans.
  const std::vector<int32_t>& all_tokens() const { return tokens_; }
  const std::vector<int8_t>& all_segments() const { return segments_; }
  const std::vector<int32_t>& all_labels() const { return labels_; }
  size_t example_of_token(size_t i) const;
  size_t example_of_prediction(size_t i) const;
  // The bytes its arrays hold (their capacity).
  uint64_t bytes() const;
  void shrink_to_fit();

 private:
  std::vector<int32_t> tokens_, positions_, labels_;
  std::vector<int8_t> segments_;
  std::vector<uint8_t> random_next_;
  std::vector<uint64_t> token_starts_, prediction_starts_;  // size() + 1 each
};

PackedExamples pack_examples(const std::vector<Example>& examples);

}  // namespace bertc::data
