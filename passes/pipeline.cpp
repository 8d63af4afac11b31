// The order of the training passes, in one place.
#include "passes/pipeline.h"

#include "ir/verifier.h"
#include "passes/accumulate.h"
#include "passes/attention.h"
#include "passes/autodiff.h"
#include "passes/precision.h"

namespace bertc::passes {

OptimizerOptions optimizer_options(const frontend::TrainConfig& t) {
  return {t.optimizer, t.beta1, t.beta2, t.epsilon, t.weight_decay, t.max_grad_norm, t.gradient_accumulation_steps};
}

TrainingProgram compile_training(ir::Graph forward, const frontend::CompileOptions& options,
                                 const OptimizerOptions& optimizer,
                                 const std::function<void(const std::string&, const ir::Graph&)>& after_pass) {
  auto done = [&](const std::string& name, const ir::Graph& g) {
    ir::verify_or_throw(g);
    if (after_pass) after_pass(name, g);
  };
  done("frontend", forward);
  if (options.fused_attention) {
    fuse_attention(forward);
    done("attention", forward);
  }
  apply_precision(forward, options.precision);
  done("precision", forward);
  differentiate(forward);
  done("autodiff", forward);
  accumulate_gradients(forward);
  done("accumulate", forward);
  ir::Graph optimizer_graph = build_optimizer_graph(forward, optimizer);
  done("optimizer", optimizer_graph);
  return {std::move(forward), std::move(optimizer_graph)};
}

}  // namespace bertc::passes
