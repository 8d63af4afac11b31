// Turns gradient outputs into accumulator updates.
#include "passes/accumulate.h"

#include <fmt/format.h>

#include "ir/builder.h"
#include "ir/value_names.h"

namespace bertc::passes {

void accumulate_gradients(ir::Graph& graph) {
  ir::Builder b(std::move(graph));
  std::vector<ir::ValueId> kept_outputs;
  std::vector<std::pair<ir::ValueId, ir::ValueId>> grads;  // (param, gradient)
  for (ir::ValueId out : b.graph().outputs()) {
    const std::string& name = b.graph().value(out).name;
    const std::string_view suffix = ir::names::kGradSuffix;
    auto param = name.ends_with(suffix) ? b.graph().find(name.substr(0, name.size() - suffix.size())) : std::nullopt;
    if (param && b.graph().producer(*param).kind == ir::OpKind::Param) grads.emplace_back(*param, out);
    else kept_outputs.push_back(out);
  }
  if (grads.empty()) throw ir::Error("accumulate: the graph has no <param>.grad outputs; run autodiff first");
  ir::Builder::OpScope scope(b, "backward/accumulate");
  for (const auto& [param, grad] : grads) {
    const ir::Value& p = b.graph().value(param);
    ir::Tensor acc = b.state(ir::names::grad_accumulator_of(p.name), p.type);
    b.update(acc, acc + b.value(grad));
  }
  graph = std::move(b).finish();
  graph.set_outputs(kept_outputs);
}

}  // namespace bertc::passes
