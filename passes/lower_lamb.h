// LAMB lowered to the ops kernels render: the moments and the update direction elementwise, the
// two per-tensor norms as reductions, the trust ratio and the update elementwise again.
//
// Pre:  a verified optimizer graph (build_optimizer_graph) with lamb ops.
// Post: no lamb op; each is replaced, with the same results, by
//         m' = b1 m + (1 - b1) g,  v' = b2 v + (1 - b2) g^2,
//         u  = (m' / c1) / (sqrt(v' / c2) + eps) + wd p,   c_i = 1 - b_i^step (= -expm1(step ln b_i)),
//         trust = |p| / |u| (1 when either is 0),  p' = p - lr trust u,
//       the sums of squares of p and u being scalar reductions; u is computed twice, once for its
//       norm and once for the update, so that the fusion pass puts the norms in a kernel of their
//       own (between the gradient norm's and the update's) and no u is stored. Equal to the lamb
//       op up to float rounding (the reference's lamb works in double).
// Order: after optimizer, before fusion.
#pragma once

#include <cstddef>

#include "ir/graph.h"

namespace bertc::passes {

// Returns the number of lamb ops lowered.
size_t lower_lamb(ir::Graph& graph);

}  // namespace bertc::passes
