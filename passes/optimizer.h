// The optimizer step as a graph of its own, run once per K micro-batches.
//
// Pre:  a verified step graph after accumulate_gradients (states "<p>.grad_acc").
// Post: returns a new graph reading the input learning_rate (f32[]) and, per param p: the mean
//       gradient grad_acc / K (also / loss_scale when the step graph scales the loss); the global
//       L2 norm of all of them (output grad_norm); clipping to max_grad_norm (when > 0) by the
//       factor min(1, max_grad_norm / (norm + 1e-6)); one op of the optimizer (adamw, lamb, ...);
//       updates of p and of each state the op declares (ir::optimizer_states: "<p>.exp_avg",
//       "<p>.exp_avg_sq" for adamw); and the accumulator set back to zero. The count of
//       updates is the state optimizer_step (bias correction). With loss scaling, a step whose
//       gradients hold inf or nan changes no param, moment or count (output step_skipped = 1) and
//       halves the state loss_scale; 2000 clean steps double it. Weight decay skips biases and
//       layer-norm params (names containing "bias", "LayerNorm" or "layer_norm"), as in BERT.
//       ZeRO stage 1 (options.shards > 1): only the params of shard options.shard
//       (optimizer_shards.h) are the graph's, with their states and updates; every accumulator is
//       still set back to zero; the norm is of the input grad_acc_sum_of_squares (the ranks' sum
//       of every accumulator's squares) unscaled as the gradients are. Loss scaling is refused.
#pragma once

#include <string>

#include "ir/builder.h"
#include "ir/graph.h"
#include "passes/options.h"

namespace bertc::passes {

// The sum of x's squared elements, a scalar (a reduction over every axis).
ir::Tensor sum_of_squares(ir::Builder& b, ir::Tensor x);

// True for the params the BERT recipe exempts from weight decay.
bool exempt_from_weight_decay(const std::string& param_name);

ir::Graph build_optimizer_graph(const ir::Graph& step_graph, const OptimizerOptions& options);
// Whether `graph` is an optimizer graph: it holds the optimizer's step count, a state named
// optimizer_step (a forward graph's param of that name is not one).
bool is_optimizer_graph(const ir::Graph& graph);

}  // namespace bertc::passes
