// The kernel families of codegen: what renders each launching op, and what a fused op's `kernel`
// attribute names. One enum, shared by the op table, fusion, the cost model, the report and the
// renderer; its printed names are the attribute's values.
#pragma once

#include "ir/enum_names.h"

namespace bertc::ir {

enum class KernelFamily {
  None,               // no kernel: sources, views, effects
  Pointwise,          // elementwise chains with broadcasts, slices, pads, permutes and gathers as loads
  RowReduction,       // softmax, layer norm, cross-entropy and their gradients, with ops before and after
  Reduction,          // sums, means and maxima over axes, with ops before and after
  ScatterAdd,         // gather's gradient
  Sort,               // argsort: the order scatter_add adds its rows in
  MultiTensorNorm,    // every gradient's norm and the overflow check, one launch
  MultiTensorUpdate,  // the optimizer step for every parameter, one launch
  Matmul,             // a matrix product with its pointwise epilogue
  Attention,          // fused attention and its backward
};

BERTC_ENUM_NAMES(KernelFamily, {KernelFamily::None, "none"}, {KernelFamily::Pointwise, "pointwise"},
                 {KernelFamily::RowReduction, "row_reduction"}, {KernelFamily::Reduction, "reduction"},
                 {KernelFamily::ScatterAdd, "scatter_add"},
                 {KernelFamily::Sort, "sort"}, {KernelFamily::MultiTensorNorm, "multi_tensor_norm"},
                 {KernelFamily::MultiTensorUpdate, "multi_tensor_update"}, {KernelFamily::Matmul, "matmul"},
                 {KernelFamily::Attention, "attention"})

}  // namespace bertc::ir
