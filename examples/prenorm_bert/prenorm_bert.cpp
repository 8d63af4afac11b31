// A BERT variant a user might write: pre-layer-norm encoder layers with a gated GELU (GEGLU)
// feed-forward block, reusing bertc's BERT embeddings, attention and pretraining heads (and, for
// bertc finetune, its task heads on the same encoder).
// Built by bertc_add_model(prenorm-bert ...) into a program with bertc's subcommands.
#include "frontend/bert.h"

namespace {

using namespace bertc::frontend;

// x + dropout(W_o attention(LN(x))); then h + dropout(FFN(LN(h))).
Tensor prenorm_layer(Builder& b, const ModelSettings& c, Tensor x, Tensor bias) {
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

// Pre-LN stacks need a final norm: the residual stream is never normalised otherwise.
Tensor final_norm(Builder& b, const ModelSettings& c, Tensor x) {
  return layer_norm(b, x, "bert.encoder.final_layer_norm", c.model.layer_norm_eps);
}

bertc::ir::Graph build_prenorm_bert(const ModelSettings& c) { return build_pretraining_graph(c, prenorm_layer, final_norm); }

}  // namespace

BERTC_MODEL(ModelDefinition{"prenorm-bert",
                            "pre-layer-norm BERT with an optional gated-GELU feed-forward block",
                            build_prenorm_bert,
                            {{"gated_ffn", true, "gated_ffn must be true or false (GEGLU feed-forward block)"}},
                            Encoder{prenorm_layer, final_norm}})
