// A batch of rows that each hold up to K whole pretraining examples side by side (issue 39: train
// on tokens, not padding; rows from data/row_packing): positions restart at each example, each
// example keeps its [CLS] position and next-sentence label, a row's empty example slots weigh 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "data/pretraining_data.h"
#include "data/row_packing.h"

namespace bertc::data {

// The rows of `examples` (each row a list of indices into `examples`, in the order they are laid
// out) as a batch of `per_row` examples a row at most (Batch::examples_per_row), at seq_len
// `seq_len` and `predictions` masked positions a row. Throws DataError for a row whose examples do
// not fit.
Batch row_batch(std::span<const Example> examples, std::span<const std::vector<size_t>> rows, int64_t seq_len,
                int64_t predictions, int64_t per_row, int64_t pad_id);

// The sizes of the examples of the first `most_rows` rows of `source`'s first epoch, row by row in
// layout order: a sample of its rows as training takes them, the shards in their shuffled order (a
// source of one example a row: each row that example).
std::vector<std::vector<ExampleSize>> sampled_rows(const ExampleSource& source, int64_t most_rows);

}  // namespace bertc::data
