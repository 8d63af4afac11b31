// Index operands of the ops that read by index (see index_reads.h).
#include "ir/index_reads.h"

namespace bertc::ir {

std::vector<IndexRead> index_reads(const Graph& g, const Op& op) {
  auto dim = [&](ValueId v, size_t d) { return g.value(v).type.shape.at(d); };
  auto classes = [&](ValueId logits) { return g.value(logits).type.shape.back(); };
  switch (op.kind) {
    case OpKind::Gather:  // table[b..., indices, ...]
      return {{1, dim(op.operands[0], static_cast<size_t>(op.attr<int64_t>("batch_dims"))), "the table's rows"}};
    case OpKind::ArgSort:  // counts per row of [0, rows)
      return {{0, op.attr<int64_t>("rows"), "its rows"}};
    case OpKind::ScatterAdd:  // result[b..., indices, ...] += updates[order]
      return {{1, dim(op.results[0], static_cast<size_t>(op.attr<int64_t>("batch_dims"))), "the result's rows"}};
    case OpKind::CrossEntropy: return {{1, classes(op.operands[0]), "the logits' classes"}};
    case OpKind::CrossEntropyGrad: return {{2, classes(op.operands[1]), "the logits' classes"}};
    default: return {};
  }
}

bool keeps_values(OpKind kind) {
  return kind == OpKind::Reshape || kind == OpKind::Broadcast || kind == OpKind::Slice || kind == OpKind::Cast;
}

}  // namespace bertc::ir
