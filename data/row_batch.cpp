// Rows of whole examples laid out as a batch (see row_batch.h).
#include "data/row_batch.h"

#include <algorithm>

#include <fmt/format.h>

namespace bertc::data {

Batch row_batch(std::span<const Example> examples, std::span<const std::vector<size_t>> rows, int64_t seq_len,
                int64_t predictions, int64_t per_row, int64_t pad_id) {
  const auto B = static_cast<int64_t>(rows.size());
  const int64_t S = seq_len, P = predictions, K = per_row;
  Batch b{B, S, P, std::vector<int64_t>(B * S, pad_id), std::vector<int64_t>(B * S, 0), std::vector<int64_t>(B * S, 0),
          std::vector<int64_t>(B * P, 0), std::vector<int64_t>(B * P, 0), std::vector<int64_t>(B * K, 0),
          std::vector<float>(B * P, 0.0f)};
  b.examples_per_row = K;
  b.example_ids.assign(B * S, K);  // (padding after the last example: ids rise along a row)
  b.position_ids.assign(B * S, 0);
  b.cls_positions.assign(B * K, 0);
  b.next_sentence_weights.assign(B * K, 0.0f);
  for (int64_t r = 0; r < B; ++r) {
    const std::vector<size_t>& row = rows[r];
    if (static_cast<int64_t>(row.size()) > K)
      throw DataError(fmt::format("row {} holds {} examples, more than {} a row", r, row.size(), K));
    int64_t start = 0, masked = 0;
    for (size_t k = 0; k < row.size(); ++k) {
      const Example& ex = examples[row[k]];
      const auto n = static_cast<int64_t>(ex.tokens.size());
      const auto m = static_cast<int64_t>(ex.masked_positions.size());
      if (start + n > S || masked + m > P)
        throw DataError(fmt::format("row {}'s examples take {} tokens and {} predictions, past seq_len {} and {} "
                                    "predictions a row",
                                    r, start + n, masked + m, S, P));
      for (int64_t i = 0; i < n; ++i) {
        const int64_t at = r * S + start + i;
        b.input_ids[at] = ex.tokens[i];
        b.token_type_ids[at] = ex.segment_ids[i];
        b.attention_mask[at] = 1;
        b.example_ids[at] = static_cast<int64_t>(k);
        b.position_ids[at] = i;
      }
      for (int64_t i = 0; i < m; ++i) {
        const int64_t at = r * P + masked + i;
        b.masked_lm_positions[at] = start + ex.masked_positions[i];
        b.masked_lm_ids[at] = ex.masked_labels[i];
        b.masked_lm_weights[at] = 1.0f;
      }
      b.cls_positions[r * K + k] = start;
      b.next_sentence_labels[r * K + k] = ex.is_random_next ? 1 : 0;
      b.next_sentence_weights[r * K + k] = 1.0f;
      start += n, masked += m;
    }
  }
  return b;
}

std::vector<std::vector<ExampleSize>> sampled_rows(const ExampleSource& source, int64_t most_rows) {
  std::vector<std::vector<ExampleSize>> out;
  for (int64_t i = 0; i < std::min(source.size(), most_rows); ++i) {
    std::vector<ExampleSize>& row = out.emplace_back();
    for (const Example& e : source.row(i))
      row.push_back({static_cast<int64_t>(e.tokens.size()), static_cast<int64_t>(e.masked_positions.size())});
  }
  return out;
}

}  // namespace bertc::data
