// A batch of rows that each hold up to K whole pretraining examples side by side (issue 39: train
// on tokens, not padding; rows from data/row_packing). Beside the padded batch's inputs, what keeps
// a row's examples apart: each token's example and its position within it (positions restart at
// each example), each example's [CLS] position and next-sentence label, with a weight of 0 for a
// row's empty example slots. Not yet used by the loader or the model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "data/pretraining_data.h"

namespace bertc::data {

struct RowBatch {
  // [B,S] input_ids, token_type_ids, attention_mask; [B,P] masked_lm_* (a row's examples' masked
  // positions, in the row's numbering); next_sentence_labels [B,K] (not [B]).
  Batch batch;
  int64_t examples_per_row = 0;              // K
  std::vector<int64_t> example_ids;          // [B,S]: 1..K for a row's examples, 0 for padding
  std::vector<int64_t> position_ids;         // [B,S]: the position within its example (0 for padding)
  std::vector<int64_t> cls_positions;        // [B,K]: where each example's [CLS] is (0 for an empty slot)
  std::vector<float> next_sentence_weights;  // [B,K]: 1 for an example, 0 for an empty slot
};

// The rows of `examples` (each row a list of indices into `examples`, in the order they are laid
// out) at seq_len `seq_len`, `predictions` masked positions a row and `per_row` examples a row
// at most. Throws DataError for a row whose examples do not fit.
RowBatch row_batch(std::span<const Example> examples, std::span<const std::vector<size_t>> rows, int64_t seq_len,
                   int64_t predictions, int64_t per_row, int64_t pad_id);

}  // namespace bertc::data
