// Reverse-mode automatic differentiation of the loss.
//
// Pre:  a verified forward graph with a scalar f32 output named "loss" (or "scaled_loss", from the
//       precision pass, which is then what is differentiated).
// Post: every param p has a value "<p>.grad" of p's type holding d loss / d p (zeros where the
//       loss does not depend on p), appended to the outputs in param order; the original outputs
//       and their values are unchanged. The backward ops are ordinary IR: the chain rule per op
//       below, composite ops through their *_grad ops, dropout through the same mask (same seed
//       and offset), gather through argsort and scatter_add
//       (the rows landing on one table row added in sorted order: deterministic).
// Order: first of the training passes (before accumulation, optimizer, recompute, fusion).
#pragma once

#include "ir/graph.h"

namespace bertc::passes {

void differentiate(ir::Graph& graph);

}  // namespace bertc::passes
