// The training pipeline: forward graph -> step graph (forward, backward, gradient accumulation)
// and optimizer graph, each pass followed by the verifier.
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
};

// The optimizer settings of a [train] section.
OptimizerOptions optimizer_options(const frontend::TrainConfig& train);

// `options` must be resolved (resolve_options in targets.h). `after_pass(name, graph)`, when
// given, sees the graph after every pass (for --print-ir-after-all and --dump-ir).
TrainingProgram compile_training(ir::Graph forward, const frontend::CompileOptions& options,
                                 const OptimizerOptions& optimizer,
                                 const std::function<void(const std::string&, const ir::Graph&)>& after_pass = {});

}  // namespace bertc::passes
