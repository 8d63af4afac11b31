// Mixed precision: activations in fp16 or bf16, fp32 master weights, loss scaling for fp16.
//
// Pre:  a verified forward graph (before autodiff); precision already resolved (not "auto").
// Post: for fp16, bf16 and fp32-fp16storage, activations are stored in the reduced dtype R (f16,
//       bf16, f16): an op that reads an R value reads all its float operands in R (params,
//       constants and f32 values cast at the use) and gives R results; gather and slice of a
//       param read the f32 param and cast their result; params stay f32 (master weights) and so
//       do losses. Kernels compute in f32 and store R (the reference rounds to R where the IR says
//       so). With f16 (which underflows where bf16 does not), the loss is multiplied by a state
//       loss_scale into an output "scaled_loss", which autodiff differentiates, so every gradient
//       is scaled; the optimizer graph divides it out and skips steps that overflow. fp32: no change.
// Order: after the attention pass (whose pattern wants the constant scale uncast), before autodiff,
//        so that autodiff derives the mixed-precision backward.
#pragma once

#include "ir/graph.h"
#include "passes/options.h"

namespace bertc::passes {

// `precision` is resolved (not auto).
void apply_precision(ir::Graph& graph, Precision precision);

// The reduced storage dtype of a precision (F32 for fp32).
ir::DType activation_dtype(Precision precision);

}  // namespace bertc::passes
