// The training pipeline, one pass after another, each followed by the verifier:
//   forward graph: attention (optional), precision
//   -> autodiff -> accumulate: the step graph (one micro-batch: forward, backward, accumulation)
//   -> the optimizer graph (one optimizer step), built from the step graph
//   -> recompute (step) -> fusion (both, optional) -> schedule (both).
// Precision and attention come before autodiff (DESIGN.md lists precision later): autodiff then
// derives the mixed-precision backward and attention's own backward with no further pass.
#pragma once

#include <functional>
#include <string>

#include "frontend/config.h"
#include "ir/graph.h"
#include "passes/optimizer.h"

namespace bertc::passes {

struct TrainingProgram {
  ir::Graph step;       // run once per micro-batch
  ir::Graph optimizer;  // run once per optimizer step
  std::string recompute;  // the policy applied ("auto: full on 3 of 12 layers", ...)
};

// The optimizer settings of a [train] section.
OptimizerOptions optimizer_options(const frontend::TrainConfig& train);

// `options` must be resolved (resolve_options in targets.h). `after_pass(name, graph)`, when
// given, sees the graph after every pass (for --print-ir-after-all and --dump-ir).
TrainingProgram compile_training(ir::Graph forward, const frontend::CompileOptions& options,
                                 const OptimizerOptions& optimizer,
                                 const std::function<void(const std::string&, const ir::Graph&)>& after_pass = {});

}  // namespace bertc::passes
