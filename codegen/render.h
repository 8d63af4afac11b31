// The renderer: every fused group and every other launching op of a graph becomes one CUDA C++
// kernel over the prelude, by kernel family (pointwise, row reduction, reduction, scatter-add,
// multi-tensor norm and update). Matrix products and attention are left to the matrix kernels.
//
// Pre:  a verified graph after fusion and schedule (the op order is the launch order).
// Post: one KernelSpec per launching op that is not a matmul or attention op, in op order; the
//       others listed as deferred. Kernels with equal source share a name.
#pragma once

#include "codegen/kernel.h"
#include "ir/graph.h"

namespace bertc::codegen {

GraphKernels render_graph(const ir::Graph& graph);

}  // namespace bertc::codegen
