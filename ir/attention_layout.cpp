// The operand table and row strides of the attention ops.
#include "ir/attention_layout.h"

#include <fmt/format.h>

#include "ir/error.h"

namespace bertc::ir {
namespace {

// Operand positions of each attention op, as ops.def lists them (seed: where it is when given).
struct Positions {
  OpKind kind;
  bool backward, packed;
  size_t q, k, v, bias, dout, out, lse, seed;
};
constexpr Positions kPositions[] = {
    {OpKind::Attention, false, false, 0, 1, 2, 3, 0, 0, 0, 4},
    {OpKind::AttentionGrad, true, false, 1, 2, 3, 4, 0, 5, 6, 7},
    {OpKind::AttentionQkv, false, true, 0, 0, 0, 1, 0, 0, 0, 2},
    {OpKind::AttentionQkvGrad, true, true, 1, 1, 1, 2, 0, 3, 4, 5},
};

}  // namespace

AttentionLayout attention_layout(const Graph& graph, const Op& op) {
  const Positions* p = nullptr;
  for (const Positions& candidate : kPositions)
    if (candidate.kind == op.kind) p = &candidate;
  if (!p) throw Error(fmt::format("attention layout: {} is not an attention op", op.info().name));
  AttentionLayout l;
  l.backward = p->backward, l.packed = p->packed;
  l.q = p->q, l.k = p->k, l.v = p->v, l.bias = p->bias, l.dout = p->dout, l.out = p->out, l.lse = p->lse;
  // (example_ids, with blocks, is the last operand; the seed, where given, the one before it)
  const bool blocks = op.attr<bool>("blocks");
  if (blocks) l.example_ids = op.operands.size() - 1;
  if (op.operands.size() - (blocks ? 1 : 0) > p->seed) l.seed = p->seed;
  const Shape& q = graph.value(op.operands[p->q]).type.shape;
  if (p->packed) {  // qkv [B,S,3,h,d], out [B,S,h,d]
    l.batch = q[0], l.sq = l.sk = q[1], l.heads = q[3], l.d = q[4];
    const int64_t hidden = l.heads * l.d, row = 3 * hidden;
    l.q_rows = {0, l.sq * row, l.d, row};
    l.k_rows = {hidden, l.sq * row, l.d, row};
    l.v_rows = {2 * hidden, l.sq * row, l.d, row};
    l.out_rows = {0, l.sq * hidden, l.d, hidden};
  } else {  // q, k, v, out [B,h,S,d]
    l.batch = q[0], l.heads = q[1], l.sq = q[2], l.d = q[3];
    l.sk = graph.value(op.operands[p->k]).type.shape[2];
    l.q_rows = l.out_rows = {0, l.heads * l.sq * l.d, l.sq * l.d, l.d};
    l.k_rows = l.v_rows = {0, l.heads * l.sk * l.d, l.sk * l.d, l.d};
    l.dk = 1, l.dv = 2;
  }
  return l;
}

}  // namespace bertc::ir
