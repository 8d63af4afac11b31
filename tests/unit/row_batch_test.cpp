// data/row_batch: rows of whole examples laid out as a batch — every input worked out by hand for
// two rows (two examples, then one): tokens side by side, positions restarting at each example,
// each token's example, masked positions renumbered in the row, [CLS] positions and next-sentence
// labels per example slot with weights; rows that do not fit refused.
#include <gtest/gtest.h>

#include <vector>

#include "data/row_batch.h"

namespace bertc::data {
namespace {

std::vector<Example> three_examples() {
  Example e0{{101, 5, 102, 6, 102}, {0, 0, 0, 1, 1}, false, {1}, {7}};
  Example e1{{101, 8, 9, 102, 10, 102}, {0, 0, 0, 0, 1, 1}, true, {2, 4}, {11, 12}};
  Example e2{{101, 13, 102, 14, 102}, {0, 0, 0, 1, 1}, false, {3}, {15}};
  return {e0, e1, e2};
}

TEST(RowBatch, ExamplesSideBySideWithTheirOwnPositions) {
  const std::vector<Example> examples = three_examples();
  const std::vector<std::vector<size_t>> rows{{0, 2}, {1}};
  const Batch r = row_batch(examples, rows, 12, 4, 3, 0);
  using V = std::vector<int64_t>;
  EXPECT_EQ(r.input_ids, (V{101, 5, 102, 6, 102, 101, 13, 102, 14, 102, 0, 0,  //
                                  101, 8, 9, 102, 10, 102, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(r.token_type_ids, (V{0, 0, 0, 1, 1, 0, 0, 0, 1, 1, 0, 0,  //
                                       0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(r.attention_mask, (V{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0,  //
                                       1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0}));
  // Examples 0..K-1, padding K (3): rising along each row.
  EXPECT_EQ(r.example_ids, (V{0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 3, 3,  //
                              0, 0, 0, 0, 0, 0, 3, 3, 3, 3, 3, 3}));
  EXPECT_EQ(r.position_ids, (V{0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 0,  //
                               0, 1, 2, 3, 4, 5, 0, 0, 0, 0, 0, 0}));
  // Example 2's masked position 3 is the row's 5 + 3.
  EXPECT_EQ(r.masked_lm_positions, (V{1, 8, 0, 0, 2, 4, 0, 0}));
  EXPECT_EQ(r.masked_lm_ids, (V{7, 15, 0, 0, 11, 12, 0, 0}));
  EXPECT_EQ(r.masked_lm_weights, (std::vector<float>{1, 1, 0, 0, 1, 1, 0, 0}));
  EXPECT_EQ(r.cls_positions, (V{0, 5, 0, 0, 0, 0}));
  EXPECT_EQ(r.next_sentence_labels, (V{0, 0, 0, 1, 0, 0}));
  EXPECT_EQ(r.next_sentence_weights, (std::vector<float>{1, 1, 0, 1, 0, 0}));
  EXPECT_EQ(r.batch_size, 2);
  EXPECT_EQ(r.examples_per_row, 3);
}

TEST(RowBatch, RowsThatDoNotFitAreRefused) {
  const std::vector<Example> examples = three_examples();
  const std::vector<std::vector<size_t>> all{{0, 1, 2}};
  EXPECT_THROW(row_batch(examples, all, 12, 8, 3, 0), DataError);  // 16 tokens in 12
  EXPECT_THROW(row_batch(examples, all, 16, 3, 3, 0), DataError);  // 4 predictions in 3
  EXPECT_THROW(row_batch(examples, all, 16, 8, 2, 0), DataError);  // 3 examples in 2 slots
  EXPECT_NO_THROW(row_batch(examples, all, 16, 4, 3, 0));
}

}  // namespace
}  // namespace bertc::data
