// Dead-code elimination: a backward liveness sweep from the outputs.
#include "passes/dce.h"

#include <vector>

namespace bertc::passes {

size_t eliminate_dead_code(ir::Graph& graph) {
  std::vector<bool> live(graph.num_values(), false);
  for (ir::ValueId v : graph.outputs()) live[v] = true;
  std::vector<bool> keep(graph.ops().size(), false);
  for (size_t i = graph.ops().size(); i-- > 0;) {
    const ir::Op& op = graph.ops()[i];
    // Sources are the step's interface and effects (updates, no results) its purpose.
    bool needed = op.kind == ir::OpKind::Input || op.kind == ir::OpKind::Param || op.kind == ir::OpKind::State ||
                  op.results.empty();
    for (ir::ValueId r : op.results) needed = needed || live[r];
    if (!needed) continue;
    keep[i] = true;
    for (ir::ValueId v : op.operands) live[v] = true;
  }
  const size_t before = graph.ops().size();
  graph.retain_ops(keep);
  return before - graph.ops().size();
}

}  // namespace bertc::passes
