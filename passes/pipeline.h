// The training pipeline: forward graph -> step graph (forward, backward, gradient accumulation)
// and optimizer graph, each pass followed by the verifier.
#pragma once

#include <functional>
#include <string>

#include "ir/graph.h"
#include "passes/optimizer.h"

namespace bertc::passes {

struct TrainingProgram {
  ir::Graph step;       // run once per micro-batch
  ir::Graph optimizer;  // run once per optimizer step
};

// `after_pass(name, graph)`, when given, sees the graph after every pass (for --print-ir-after-all).
TrainingProgram compile_training(ir::Graph forward, const OptimizerOptions& options,
                                 const std::function<void(const std::string&, const ir::Graph&)>& after_pass = {});

}  // namespace bertc::passes
