// The list of passes bertc-opt can run by name. Add a pass here when you add its file pair.
#include "passes/registry.h"

#include <iostream>

#include "ir/verifier.h"
#include "passes/accumulate.h"
#include "passes/attention.h"
#include "passes/autodiff.h"
#include "passes/optimizer.h"
#include "passes/recompute.h"
#include "passes/schedule.h"
#include "passes/precision.h"
#include "passes/dce.h"
#include "passes/fusion.h"
#include "passes/memory_plan.h"

namespace bertc::passes {
namespace {

const PassInfo kPasses[] = {
    {"verify", "check SSA order, attributes and every op's shape rule",
     [](ir::Graph& g) { ir::verify_or_throw(g); }},
    {"dce", "remove ops no output depends on", [](ir::Graph& g) { eliminate_dead_code(g); }},
    {"attention", "fuse matmul, scale, bias, softmax, dropout, matmul chains into attention ops",
     [](ir::Graph& g) { fuse_attention(g); }},
    {"precision-bf16", "store activations in bf16 (fp32 master weights)", [](ir::Graph& g) { apply_precision(g, "bf16"); }},
    {"precision-fp16", "store activations in fp16, with loss scaling", [](ir::Graph& g) { apply_precision(g, "fp16"); }},
    {"recompute-selective", "recompute cheap activations and attention matrices in the backward",
     [](ir::Graph& g) { recompute(g, "selective"); }},
    {"recompute-full", "keep only each encoder layer's inputs and outputs; recompute the rest",
     [](ir::Graph& g) { recompute(g, "full"); }},
    {"fusion", "group ops into fused kernels (one launch each)", [](ir::Graph& g) { fuse(g); }},
    {"schedule", "run ops that depend only on params and inputs just before their first use",
     [](ir::Graph& g) { schedule_for_memory(g); }},
    {"memory-plan", "print the arena plan (analysis; the graph is unchanged) to stderr",
     [](ir::Graph& g) { std::cerr << "// memory plan: " << describe(plan_memory(g)) << "\n"; }},
    {"autodiff", "append d loss / d param as outputs <param>.grad", [](ir::Graph& g) { differentiate(g); }},
    {"accumulate", "sum <param>.grad into states <param>.grad_acc", [](ir::Graph& g) { accumulate_gradients(g); }},
    {"optimizer", "replace the graph by its AdamW step graph (default settings)",
     [](ir::Graph& g) { g = build_optimizer_graph(g, OptimizerOptions{}); }},
};

}  // namespace

std::span<const PassInfo> registered_passes() { return kPasses; }

const PassInfo* find_pass(std::string_view name) {
  for (const PassInfo& p : kPasses)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace bertc::passes
