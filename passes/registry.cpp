// The list of passes bertc-opt can run by name. Add a pass here when you add its file pair.
#include "passes/registry.h"

#include "ir/verifier.h"
#include "passes/accumulate.h"
#include "passes/autodiff.h"
#include "passes/optimizer.h"
#include "passes/dce.h"

namespace bertc::passes {
namespace {

const PassInfo kPasses[] = {
    {"verify", "check SSA order, attributes and every op's shape rule",
     [](ir::Graph& g) { ir::verify_or_throw(g); }},
    {"dce", "remove ops no output depends on", [](ir::Graph& g) { eliminate_dead_code(g); }},
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
