// A BERT variant a user might write: pre-layer-norm encoder layers with a gated GELU (GEGLU)
// feed-forward block, reusing bertc's BERT embeddings, attention and pretraining heads.
// Built by bertc_add_model(prenorm-bert ...) into a program with bertc's subcommands.
#include "frontend/bert.h"

namespace {

using namespace bertc::frontend;

// x + dropout(W_o attention(LN(x))); then h + dropout(FFN(LN(h))).
Tensor prenorm_layer(Builder& b, const Config& c, Tensor x, Tensor bias) {
  const ModelConfig& m = c.model;
  Tensor h;
  {
    auto scope = b.scope("attention");
    Tensor normed = layer_norm(b, x, "input_layer_norm", m.layer_norm_eps);
    Tensor attended = dense(b, self_attention(b, c, normed, bias), m.hidden_size, "output.dense");
    h = x + b.dropout(attended, hidden_dropout(c));
  }
  Tensor normed = layer_norm(b, h, "ffn.input_layer_norm", m.layer_norm_eps);
  Tensor inner = gelu(dense(b, normed, m.intermediate_size, "intermediate.dense"));
  if (c.extra_value<bool>("gated_ffn")) inner = inner * dense(b, normed, m.intermediate_size, "intermediate.gate");
  return h + b.dropout(dense(b, inner, m.hidden_size, "output.dense"), hidden_dropout(c));
}

bertc::ir::Graph build_prenorm_bert(const Config& c) {
  Builder b(graph_name_for(c.name));
  const BertInputs in = add_pretraining_inputs(b, c.train);
  const Embeddings emb = embeddings(b, c, in);
  const Tensor bias = attention_bias(b, in.attention_mask);
  Tensor x = emb.output;
  for (int64_t i = 0; i < c.model.num_hidden_layers; ++i) {
    auto scope = b.scope(fmt::format("bert.encoder.layer.{}", i));
    x = prenorm_layer(b, c, x, bias);
  }
  // Pre-LN stacks need a final norm: the residual stream is never normalised otherwise.
  x = layer_norm(b, x, "bert.encoder.final_layer_norm", c.model.layer_norm_eps);
  const PretrainingLosses losses = pretraining_heads(b, c, x, emb.word_embeddings, in);
  b.output(losses.total, "loss");
  b.output(losses.mlm, "mlm_loss");
  b.output(losses.nsp, "nsp_loss");
  return std::move(b).finish();
}

}  // namespace

BERTC_MODEL(ModelDefinition{"prenorm-bert",
                            "pre-layer-norm BERT with an optional gated-GELU feed-forward block",
                            build_prenorm_bert,
                            {{"gated_ffn", true, "gated_ffn must be true or false (GEGLU feed-forward block)"}}})
