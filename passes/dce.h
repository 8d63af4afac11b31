// Dead-code elimination.
//
// Pre:  a verified graph.
// Post: every op that is not an input or param contributes to a graph output; outputs, inputs
//       and params (the step's interface) are unchanged, and so are the values of the outputs.
// Order: any time; later passes run it to drop what they made unreachable.
#pragma once

#include "ir/graph.h"

namespace bertc::passes {

// Removes ops whose results no output depends on. Returns the number of ops removed.
size_t eliminate_dead_code(ir::Graph& graph);

}  // namespace bertc::passes
