// Where an attention op's operands and results are, and how their rows are laid out: the one
// description of the four attention ops (attention, attention_grad over [B,h,S,d] tensors;
// attention_qkv, attention_qkv_grad over a packed [B,S,3,h,d] projection and a [B,S,h,d] output)
// that the reference, the FLOP count and the kernel renderer share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "ir/graph.h"

namespace bertc::ir {

// Element (b, h, i, c) of q, k, v or out, for batch b, head h, sequence position i and head
// dim c (contiguous), is at offset + b * batch + h * head + i * row + c of its tensor.
struct AttentionRows {
  int64_t offset = 0, batch = 0, head = 0, row = 0;
  int64_t at(int64_t b, int64_t h, int64_t i) const { return offset + b * batch + h * head + i * row; }
};

struct AttentionLayout {
  bool backward = false, packed = false;
  int64_t batch = 0, heads = 0, sq = 0, sk = 0, d = 0;
  // Operand indices; q, k and v are one operand when packed. dout, out and lse: backward only.
  size_t q = 0, k = 0, v = 0, bias = 0, dout = 0, out = 0, lse = 0;
  std::optional<size_t> seed;
  std::optional<size_t> example_ids;  // with blocks = true: i32 [B,S], the last operand
  // The backward's results that hold dq, dk and dv (all result 0 when packed).
  size_t dq = 0, dk = 0, dv = 0;
  // Rows of q, k, v (and of dq, dk, dv, laid out as them) and of out (and dout).
  AttentionRows q_rows, k_rows, v_rows, out_rows;
};

// The layout of an op of the attention family (throws for any other op).
AttentionLayout attention_layout(const Graph& graph, const Op& op);

}  // namespace bertc::ir
