// Activation recomputation (checkpointing): drop forward activations that the backward would
// keep alive, and recompute them where the backward needs them.
//
// Pre:  a verified step graph after autodiff (backward ops have scopes "backward/...").
// Post: the chosen forward values are no longer read by backward ops; each backward use reads a
//       copy ("recompute/<scope>") made from kept values just before the first backward use.
//       Loss, gradients and dropout masks (same seed and offset) are unchanged.
// Policies: none; selective: drop what cheap ops make again from kept values (pointwise, layout,
//       softmax, dropout, layer norm, attention; no weight matmul) and every [B,h,S,S] attention
//       tensor; full: in each encoder layer (scope "...layer.N")
//       keep only values other layers read (the layer inputs and outputs) and recompute the rest;
//       auto: of the plans whose planned activation memory fits memory_budget, the one with the
//       fewest recompute FLOPs among none, selective, full on the first k layers, and full on the
//       first k layers with selective on the rest (the fewest k of each found by bisection).
// Order: after autodiff and accumulation, before fusion and schedule.
#pragma once

#include <cstdint>
#include <string>

#include "ir/graph.h"
#include "passes/options.h"

namespace bertc::passes {

struct RecomputeResult {
  std::string policy;             // what was applied (auto names its choice)
  int64_t layers = 0;             // full: layers recomputed
  int64_t dropped_values = 0;     // forward values no longer kept for the backward
  int64_t recompute_flops = 0;    // FLOPs of the recomputing ops
};

// auto needs memory_budget > 0, in bytes of arena planned on the graph as recompute leaves it
// (before fusion: the final plan's, which the compile report shows, is smaller).
RecomputeResult recompute(ir::Graph& graph, RecomputePolicy policy, int64_t memory_budget = 0);

}  // namespace bertc::passes
