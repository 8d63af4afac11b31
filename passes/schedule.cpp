// Sinking source-only ops to their first use.
#include "passes/schedule.h"

#include <algorithm>
#include <functional>

#include "passes/graph_copy.h"

namespace bertc::passes {

using ir::OpKind;

size_t schedule_for_memory(ir::Graph& graph) {
  const auto& ops = graph.ops();
  using ir::is_source;
  // Sources that are not the batch: the same at every step.
  const auto is_weight = [](OpKind k) { return is_source(k) && k != OpKind::Input; };
  // On demand: sources, and ops computable from weights and constants alone (not from the batch):
  // both are placed just before their first user.
  std::vector<bool> floating(ops.size(), false), weight_only(ops.size(), false);
  for (size_t i = 0; i < ops.size(); ++i) {
    const ir::Op& op = ops[i];
    if (is_source(op.kind)) {
      floating[i] = true;
      weight_only[i] = is_weight(op.kind);
      continue;
    }
    if (op.results.empty()) continue;
    bool from_weights = true;
    for (ir::ValueId v : op.operands) from_weights = from_weights && weight_only[graph.value(v).producer];
    weight_only[i] = from_weights;
    // Recomputed values exist to be made late: right before the backward op that needs them.
    floating[i] = from_weights || op.scope.starts_with("recompute");
  }
  // Eager: an op whose results only feed updates (gradient accumulation): it runs as soon as its
  // operands exist, so the gradient it consumes dies at once.
  std::vector<bool> eager(ops.size(), false);
  {
    std::vector<std::vector<size_t>> readers(graph.num_values());
    for (size_t i = 0; i < ops.size(); ++i)
      for (ir::ValueId v : ops[i].operands) readers[v].push_back(i);
    for (size_t i = 0; i < ops.size(); ++i) {
      if (floating[i] || ops[i].results.empty() || is_source(ops[i].kind)) continue;
      bool only_updates = true;
      for (ir::ValueId r : ops[i].results) {
        only_updates = only_updates && !readers[r].empty() && !graph.outputs().empty() &&
                       std::find(graph.outputs().begin(), graph.outputs().end(), r) == graph.outputs().end();
        for (size_t c : readers[r]) only_updates = only_updates && ops[c].kind == OpKind::Update;
      }
      eager[i] = only_updates;
    }
  }
  // An eager op waits on the op that makes its last operand.
  std::vector<std::vector<size_t>> after(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!eager[i]) continue;
    size_t latest = 0;
    for (ir::ValueId v : ops[i].operands)
      if (!floating[graph.value(v).producer]) latest = std::max<size_t>(latest, graph.value(v).producer);
    after[latest].push_back(i);
  }
  std::vector<size_t> order;
  std::vector<bool> placed(ops.size(), false);
  std::function<void(size_t)> place = [&](size_t i) {
    if (placed[i]) return;
    placed[i] = true;
    // Producers that do not run in original order go first: on-demand and eager ones.
    for (ir::ValueId v : ops[i].operands) {
      const size_t p = graph.value(v).producer;
      if (floating[p] || eager[p]) place(p);
    }
    order.push_back(i);
    for (size_t e : after[i]) place(e);
  };
  for (size_t i = 0; i < ops.size(); ++i)
    if (!floating[i] && !eager[i] && ops[i].kind != OpKind::Update) place(i);
  // Floating ops nobody else reads (outputs), and those only updates read (the optimizer's zero
  // fills of the accumulators): before every update, not between them.
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].kind != OpKind::Update) place(i);
  // The updates last, in their order: the runtime applies them after the last launch.
  for (size_t i = 0; i < ops.size(); ++i) place(i);
  size_t moved = 0;
  for (size_t i = 0; i < order.size(); ++i) moved += order[i] != i;
  if (moved == 0) return 0;
  ir::Builder b(graph.name());
  GraphCopy copy(graph, b);
  for (size_t i : order) copy.copy(ops[i]);
  copy.copy_outputs();
  graph = std::move(b).finish();
  return moved;
}

}  // namespace bertc::passes
