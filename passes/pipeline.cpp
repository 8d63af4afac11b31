// The order of the training passes, in one place.
#include "passes/pipeline.h"

#include "ir/verifier.h"
#include "passes/accumulate.h"
#include "passes/autodiff.h"

namespace bertc::passes {

TrainingProgram compile_training(ir::Graph forward, const OptimizerOptions& options,
                                 const std::function<void(const std::string&, const ir::Graph&)>& after_pass) {
  auto done = [&](const std::string& name, const ir::Graph& g) {
    ir::verify_or_throw(g);
    if (after_pass) after_pass(name, g);
  };
  done("frontend", forward);
  differentiate(forward);
  done("autodiff", forward);
  accumulate_gradients(forward);
  done("accumulate", forward);
  ir::Graph optimizer = build_optimizer_graph(forward, options);
  done("optimizer", optimizer);
  return {std::move(forward), std::move(optimizer)};
}

}  // namespace bertc::passes
