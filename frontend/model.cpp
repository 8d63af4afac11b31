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
  // (a model that builds its graph without the rows' inputs would let a row's examples attend to
  // each other, silently: refused)
  if (settings.batch.examples_per_row > 0 && !settings.head && !graph.find("example_ids"))
    throw ir::Error(fmt::format("model '{}' builds its graph without the inputs of rows of several examples "
                                "(example_ids, position_ids, cls_positions, next_sentence_weights: "
                                "frontend::add_pretraining_inputs and attention_bias give them), and [train] packing "
                                "= \"pack\" places several examples in a row: set packing = \"none\" (bertc eval: "
                                "make the batch with packing = \"none\"), or build the graph with them",
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
