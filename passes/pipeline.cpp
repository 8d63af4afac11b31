// The order of the training passes, in one place.
#include "passes/pipeline.h"

#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/accumulate.h"
#include "passes/attention.h"
#include "passes/autodiff.h"
#include "passes/fusion.h"
#include "passes/precision.h"
#include "passes/recompute.h"
#include "passes/schedule.h"

namespace bertc::passes {

OptimizerOptions optimizer_options(const frontend::TrainConfig& t) {
  return {t.optimizer, t.beta1, t.beta2, t.epsilon, t.weight_decay, t.max_grad_norm, t.gradient_accumulation_steps};
}

TrainingProgram compile_training(ir::Graph forward, const frontend::CompileOptions& options,
                                 const OptimizerOptions& optimizer,
                                 const std::function<void(const std::string&, const ir::Graph&)>& after_pass) {
  int stage = 0;
  if (!options.dump_ir.empty()) std::filesystem::create_directories(options.dump_ir);
  auto done = [&](const std::string& name, const ir::Graph& g) {
    try {
      ir::verify_or_throw(g);
    } catch (const ir::VerifyError& e) {
      throw ir::Error(fmt::format("after pass {}: {} (bertc-opt reproduces passes one by one)", name, e.what()));
    }
    ++stage;
    if (options.print_ir_after_all) std::cerr << fmt::format("// after {} ({})\n", name, g.name()) << ir::print(g);
    if (!options.dump_ir.empty())
      std::ofstream(std::filesystem::path(options.dump_ir) / fmt::format("{:02d}-{}-{}.ir", stage, name, g.name()))
          << ir::print(g);
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
  const RecomputeResult recomputed = recompute(forward, options.recompute, options.memory_budget);
  done("recompute", forward);
  if (options.fusion) {
    fuse(forward);
    done("fusion", forward);
    fuse(optimizer_graph);
    done("fusion", optimizer_graph);
  }
  schedule_for_memory(forward);
  done("schedule", forward);
  schedule_for_memory(optimizer_graph);
  done("schedule", optimizer_graph);
  return {std::move(forward), std::move(optimizer_graph), recomputed.policy};
}

}  // namespace bertc::passes
