// Fusion: ops grouped into kernels, each group one `fused` op whose region holds its ops.
//
// Pre:  a verified step or optimizer graph (after recompute).
// Post: groups of ops become fused ops, one kernel launch each, named by family (the `kernel`
//       attribute, ir/kernel_family.h) as each op's fusion pattern (ir/ops.def) decides:
//         matmul           a matrix product with its pointwise epilogue (bias, GELU, dropout,
//                          residual add, gradient accumulation, cast);
//         row_reduction    softmax, layer norm, cross-entropy or their gradients, with pointwise
//                          (and gather/slice loads) before and pointwise after: bias + dropout +
//                          residual + layer norm; embedding sum + layer norm + dropout; scale +
//                          mask + softmax + dropout; the loss and its gradient over the logits
//                          in one pass;
//         reduction        a reduction with pointwise before and after (bias gradients);
//         pointwise        elementwise chains with broadcasts, slices and pads as loads;
//         multi_tensor_norm, multi_tensor_update   the optimizer step for all params in two kernels.
//       Values only used inside a group are gone from the graph; every value used outside (or an
//       output, or an update's value) is a result of its fused op, under its old name. Loss,
//       gradients and updates are unchanged (the reference runs regions op by op).
// Order: after recompute, before schedule and the memory plan.
#pragma once

#include <cstddef>

#include "ir/graph.h"

namespace bertc::passes {

struct FusionResult {
  size_t kernels_before = 0;  // launches (ops that are kernels) before
  size_t kernels_after = 0;
  size_t fused_ops = 0;       // fused ops made
};

FusionResult fuse(ir::Graph& graph);

// Ops that are kernel launches: everything but sources, constants, reshapes (views) and updates.
size_t count_launches(const ir::Graph& graph);

}  // namespace bertc::passes
