// Op order for a lower memory peak.
//
// Pre:  a verified graph.
// Post: the same ops in another topological order: sources, recomputed ops, and every op that
//       depends only on params, states and constants (not on the batch; QKV weight concatenation,
//       weight casts, zero fills), run just before their first user; every op whose results only feed updates
//       (gradient accumulation) runs as soon as its operands exist. Their values then live as
//       briefly as possible; other ops keep their relative order, and updates stay last.
// Order: after recompute and fusion, before the memory plan.
#pragma once

#include "ir/graph.h"

namespace bertc::passes {

// Returns the number of ops that moved.
size_t schedule_for_memory(ir::Graph& graph);

}  // namespace bertc::passes
