// Gradient accumulation across micro-batches.
//
// Pre:  a verified graph after autodiff: outputs "<p>.grad" for every param p.
// Post: the "<p>.grad" outputs are gone; instead a state "<p>.grad_acc" of p's type receives
//       update(<p>.grad_acc, <p>.grad_acc + <p>.grad), so running the graph once per
//       micro-batch sums the gradients. The optimizer graph (optimizer.h) reads and clears them.
// Order: right after autodiff.
#pragma once

#include "ir/graph.h"

namespace bertc::passes {

void accumulate_gradients(ir::Graph& graph);

}  // namespace bertc::passes
