// A user's model outside bertc's tree: BERT with a ReLU feed-forward block, built from bertc's
// installed headers and libraries.
#include <bertc/frontend/bert.h>

namespace {

using namespace bertc::frontend;

Tensor relu_layer(Builder& b, const Config& c, Tensor x, Tensor bias) {
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

bertc::ir::Graph build(const Config& c) {
  Builder b(graph_name_for(c.name));
  const BertInputs in = add_pretraining_inputs(b, c.train);
  const Embeddings emb = embeddings(b, c, in);
  const Tensor bias = attention_bias(b, in.attention_mask);
  Tensor x = emb.output;
  for (int64_t i = 0; i < c.model.num_hidden_layers; ++i) {
    auto scope = b.scope(fmt::format("bert.encoder.layer.{}", i));
    x = relu_layer(b, c, x, bias);
  }
  const PretrainingLosses losses = pretraining_heads(b, c, x, emb.word_embeddings, in);
  b.output(losses.total, "loss");
  return std::move(b).finish();
}

}  // namespace

BERTC_MODEL(ModelDefinition{"relu-bert", "BERT with a ReLU feed-forward block", build, {}})
