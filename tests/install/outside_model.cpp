// A user's model outside bertc's tree: BERT with a ReLU feed-forward block, built from bertc's
// installed headers and libraries.
#include <bertc/frontend/bert.h>

namespace {

using namespace bertc::frontend;

Tensor relu_layer(Builder& b, const ModelSettings& c, Tensor x, Tensor bias) {
  const ModelConfig& m = c.model;
  Tensor attention_out;
  {
    auto scope = b.scope("attention");
    Tensor projected = dense(b, self_attention(b, c, x, bias), m.hidden_size, "output.dense");
    attention_out = layer_norm(b, projected + x, "output.LayerNorm", m.layer_norm_eps);
  }
  Tensor inner = relu(dense(b, attention_out, m.intermediate_size, "intermediate.dense"));
  Tensor out = dense(b, inner, m.hidden_size, "output.dense");
  return layer_norm(b, out + attention_out, "output.LayerNorm", m.layer_norm_eps);
}

bertc::ir::Graph build(const ModelSettings& c) { return build_pretraining_graph(c, relu_layer); }

}  // namespace

BERTC_MODEL(ModelDefinition{"relu-bert", "BERT with a ReLU feed-forward block", build, {}})
