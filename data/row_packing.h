// Placing whole pretraining examples into rows of a fixed length (issue 39: train on tokens, not
// padding): which examples share a row, decided by best fit in decreasing order of length. A
// function of the examples' sizes alone — no seed, no rank — so the same shard gives the same rows
// on every rank and in every run; the stream's order over rows stays the shuffle's business.
// ("Rows", not "packed": data/packed_examples is the examples' compaction in memory.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace bertc::data {

// What one example takes of a row.
struct ExampleSize {
  int64_t tokens = 0;       // [CLS] A [SEP] B [SEP]
  int64_t predictions = 0;  // its masked positions
};

// What one row holds at most.
struct RowCapacity {
  int64_t tokens = 0;       // seq_len
  int64_t predictions = 0;  // the masked positions a row's MLM inputs have room for
  int64_t examples = 0;     // [train] packing_max_examples
};

// Rows placed for a capacity: what pack_rows made, and what it was asked (a shard records both:
// data/hdf5_shard.h).
struct RowPlan {
  RowCapacity capacity;
  std::vector<std::vector<size_t>> rows;
};

// How many rows a set of examples was placed in, and for what capacity (what a shard records).
struct RowsPlaced {
  int64_t count = 0;
  RowCapacity capacity;
};

// Whether rows placed for `placed` fit a run's `capacity` as they are (no more tokens,
// predictions or examples a row).
inline bool fits_within(const RowCapacity& placed, const RowCapacity& capacity) {
  return placed.tokens <= capacity.tokens && placed.predictions <= capacity.predictions &&
         placed.examples <= capacity.examples;
}

// What rows leave an attention over them to compute (the cost figures of rows: the compile report,
// bertc estimate and MFU count these, passes/cost_model.h's RowFractions), summed over rows of
// `seq_len` positions: the examples' tokens; the scores whose query and key are tokens of one
// example (the sum of each example's length squared: what the examples need); and the scores of the
// pairs of query and key tiles (`tile_q` and `tile_k` positions) a kernel computes: a pair is
// skipped only where the tiles' example ids do not overlap (codegen's tiles_meet; padding counts as
// one more example, after the last, so padding's tiles meet each other).
struct RowWork {
  int64_t rows = 0, examples = 0, tokens = 0, example_scores = 0, tile_scores = 0;
  RowWork& operator+=(const RowWork& o);
};

// The work of one row holding examples of `lengths` tokens, in layout order. Throws
// std::invalid_argument when they do not fit `seq_len` or a tile is not positive.
RowWork row_work(std::span<const int64_t> lengths, int64_t seq_len, int64_t tile_q, int64_t tile_k);

// Rows of `sizes`' indices: every example in exactly one row, no row over `capacity` in tokens,
// predictions or examples. Examples taken longest first (ties: lower index first), each into the
// row it fills most closely among those it fits (ties: the row opened first), else a new row; each
// row's indices ascending, rows ordered by their first index. Throws std::invalid_argument naming
// an example that alone exceeds the capacity.
std::vector<std::vector<size_t>> pack_rows(std::span<const ExampleSize> sizes, const RowCapacity& capacity);

}  // namespace bertc::data
