// Building a model definition's graph and checking the contract the driver relies on.
#include "frontend/model.h"

#include <fmt/format.h>

#include "frontend/finetune.h"
#include "ir/value_names.h"
#include "ir/verifier.h"

namespace bertc::frontend {

ir::Graph build_model(const ModelDefinition& definition, const ModelSettings& settings) {
  ir::Graph graph = settings.head ? build_finetune_graph(definition, settings) : definition.build(settings);
  ir::verify_or_throw(graph);
  auto loss = graph.find(ir::names::kLoss);
  bool is_output = loss && std::find(graph.outputs().begin(), graph.outputs().end(), *loss) != graph.outputs().end();
  if (!is_output || graph.value(*loss).type != ir::TensorType{ir::DType::F32, {}})
    throw ir::Error(fmt::format("model '{}' must output a scalar f32 value named 'loss' (Builder::output(x, \"loss\"))",
                                definition.name));
  return graph;
}

std::string graph_name_for(const std::string& config_name) {
  std::string out;
  for (char c : config_name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "g_" + out;
  return out;
}

}  // namespace bertc::frontend
