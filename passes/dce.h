// Dead-code elimination.
//
// Pre:  a verified graph.
// Post: every op that is not a source (input, param, state) contributes to a graph output or an
//       update; outputs, sources and updates are unchanged, and so are the values they see.
// Order: any time; later passes run it to drop what they made unreachable.
#pragma once

#include "ir/graph.h"

namespace bertc::passes {

// Removes ops whose results no output or update depends on. Returns the number of ops removed.
size_t eliminate_dead_code(ir::Graph& graph);

}  // namespace bertc::passes
