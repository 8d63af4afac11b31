// The renderer: every fused group and every other launching op of a graph becomes one CUDA C++
// kernel over the prelude, by kernel family (pointwise, row reduction, reduction, scatter-add,
// multi-tensor norm and update, matmul with its epilogue, fused attention). Matrix kernels follow
// the strategy rule of matrix_strategy.h for target.sm.
//
// Pre:  a verified graph after fusion and schedule (the op order is the launch order).
// Post: one KernelSpec per launching op, in op order. Kernels with equal source share a name.
#pragma once

#include "codegen/kernel.h"
#include "codegen/matrix_strategy.h"
#include "ir/graph.h"

namespace bertc::codegen {

GraphKernels render_graph(const ir::Graph& graph, const RenderTarget& target = {});

// The memory plan of `graph` as the runtime places values (what render_graph puts in GraphKernels).
ArenaLayout arena_layout(const ir::Graph& graph);

// Whether the blocks of a `family` kernel's launch do the same work but the grid's tails, whatever
// the data: then a sample of its blocks counts the whole launch (the PTX device's sampling).
bool blocks_do_alike_work(ir::KernelFamily family);

}  // namespace bertc::codegen
