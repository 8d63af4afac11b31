// Which operands of an op are integer indices, and what each indexes: the one description of the
// ops that read a table's rows, sort, scatter or pick a class by index, which the check that
// every index is bounded on the host before a device reads by it (train/batches.h) walks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace bertc::ir {

struct IndexRead {
  size_t operand = 0;  // the operand holding indices
  int64_t size = 0;    // they must be in [0, size)
  std::string what;    // what they index, in words: "the table's rows"
};

// The index operands of `op` (an op of `g`), none for an op that reads no data by index. A new
// op whose kernel reads memory at an address made from an operand's values is added here (an
// op with an integer operand that is neither here nor a value-keeping op fails
// tests/unit/index_reads_test.cpp).
std::vector<IndexRead> index_reads(const Graph& g, const Op& op);

// A scatter_add's order operand: the permutation of its indices an argsort made.
inline constexpr size_t kScatterAddOrder = 2;

// Whether `kind` passes its operand's values on unchanged in meaning (reshape, broadcast, slice,
// cast): an index it passes on is still the same index.
bool keeps_values(OpKind kind);

}  // namespace bertc::ir
