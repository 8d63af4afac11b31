// BertForPreTraining in the DSL, following Hugging Face's module structure and names.
#include "frontend/bert.h"

#include <cmath>

#include "ir/value_names.h"

namespace bertc::frontend {

BertInputs add_pretraining_inputs(Builder& b, const BatchShape& t) {
  const int64_t B = t.batch_size, S = t.seq_len, P = t.max_predictions_per_seq, K = t.examples_per_row;
  const ir::Shape per_example = K > 0 ? ir::Shape{B, K} : ir::Shape{B};
  BertInputs in{
      b.input("input_ids", DType::I32, {B, S}),
      b.input("token_type_ids", DType::I32, {B, S}),
      b.input("attention_mask", DType::I32, {B, S}),
      b.input("masked_lm_positions", DType::I32, {B, P}),
      b.input("masked_lm_ids", DType::I32, {B, P}),
      b.input("masked_lm_weights", DType::F32, {B, P}),
      b.input("next_sentence_labels", DType::I32, per_example),
  };
  if (K > 0)
    in.rows = RowInputs{b.input("position_ids", DType::I32, {B, S}), b.input("example_ids", DType::I32, {B, S}),
                        b.input("cls_positions", DType::I32, {B, K}),
                        b.input("next_sentence_weights", DType::F32, {B, K})};
  return in;
}

double hidden_dropout(const ModelSettings& c) { return c.dropout ? c.model.hidden_dropout_prob : 0.0; }
double attention_dropout(const ModelSettings& c) { return c.dropout ? c.model.attention_probs_dropout_prob : 0.0; }

Tensor dense(Builder& b, Tensor x, int64_t out_features, std::string_view name) {
  auto scope = b.scope(name);
  Tensor w = b.param("weight", {out_features, x.dim(-1)});
  Tensor bias = b.param("bias", {out_features});
  return b.matmul(x, w, false, true) + bias;
}

Tensor layer_norm(Builder& b, Tensor x, std::string_view name, double eps) {
  auto scope = b.scope(name);
  const int64_t h = x.dim(-1);
  Tensor w = b.param("weight", {h});
  Tensor bias = b.param("bias", {h});
  return b.layer_norm(x, w, bias, eps);
}

Embeddings embeddings(Builder& b, const ModelSettings& c, const BertInputs& in) {
  return embeddings(b, c, in.input_ids, in.token_type_ids,
                    in.rows ? std::optional<Tensor>(in.rows->position_ids) : std::nullopt);
}

Embeddings embeddings(Builder& b, const ModelSettings& c, Tensor input_ids, Tensor token_type_ids,
                      std::optional<Tensor> position_ids) {
  const ModelConfig& m = c.model;
  const int64_t S = input_ids.dim(1);
  auto scope = b.scope("bert.embeddings");
  Tensor word = b.param("word_embeddings.weight", {m.vocab_size, m.hidden_size});
  Tensor position = b.param("position_embeddings.weight", {m.max_position_embeddings, m.hidden_size});
  Tensor token_type = b.param("token_type_embeddings.weight", {m.type_vocab_size, m.hidden_size});
  // Hugging Face order: (word + token type) + position; position ids are 0..S-1 (or each
  // example's own, restarting where it starts). One op per statement throughout: C++ leaves
  // argument evaluation order open, and the IR must not vary.
  Tensor words = b.gather(word, input_ids, 0, m.pad_token_id);
  Tensor types = b.gather(token_type, token_type_ids);
  Tensor sum = words + types;
  sum = sum + (position_ids ? b.gather(position, *position_ids) : b.slice(position, 0, 0, S));
  Tensor out = b.dropout(layer_norm(b, sum, "LayerNorm", m.layer_norm_eps), hidden_dropout(c));
  return {out, word};
}

Tensor attention_bias(Builder& b, Tensor attention_mask, std::optional<Tensor> example_ids) {
  const int64_t B = attention_mask.dim(0), S = attention_mask.dim(1);
  Tensor mask = b.reshape(b.cast(attention_mask, DType::F32), {B, 1, 1, S});
  // -10000 (original BERT) rather than Hugging Face's finfo.min: exp() makes both exactly 0 in
  // fp32 next to any real token, and -10000 stays finite when activations are stored in fp16
  // (-20000 too: padding of another example).
  Tensor bias = (1.0 - mask) * -10000.0;
  if (example_ids) {
    Tensor ids = b.cast(*example_ids, DType::F32);
    Tensor queries = b.reshape(ids, {B, 1, S, 1});
    Tensor keys = b.reshape(ids, {B, 1, 1, S});
    bias = b.op(ir::OpKind::BlockBias, {bias, queries, keys});
  }
  return b.name(bias, "attention_bias");
}

Tensor self_attention(Builder& b, const ModelSettings& c, Tensor x, Tensor bias) {
  const int64_t B = x.dim(0), S = x.dim(1), H = x.dim(2);
  const int64_t heads = c.model.num_attention_heads, dh = H / heads;
  Tensor wq, wk, wv, bq, bk, bv;
  {
    auto scope = b.scope("self");
    wq = b.param("query.weight", {H, H}), bq = b.param("query.bias", {H});
    wk = b.param("key.weight", {H, H}), bk = b.param("key.bias", {H});
    wv = b.param("value.weight", {H, H}), bv = b.param("value.bias", {H});
  }
  // One [3H, H] projection instead of three: one GEMM with a larger N.
  Tensor w_qkv = b.concat({wq, wk, wv}, 0);
  Tensor b_qkv = b.concat({bq, bk, bv}, 0);
  Tensor qkv = b.matmul(x, w_qkv, false, true) + b_qkv;
  qkv = b.permute(b.reshape(qkv, {B, S, 3, heads, dh}), {2, 0, 3, 1, 4});  // [3,B,heads,S,dh]
  auto head = [&](int64_t i) { return b.reshape(b.slice(qkv, 0, i, i + 1), {B, heads, S, dh}); };
  Tensor q = head(0), k = head(1), v = head(2);
  Tensor scores = b.matmul(q, k, false, true) * (1.0 / std::sqrt(static_cast<double>(dh))) + bias;
  Tensor probs = b.dropout(b.softmax(scores), attention_dropout(c));
  Tensor context = b.matmul(probs, v);  // [B,heads,S,dh]
  return b.reshape(b.permute(context, {0, 2, 1, 3}), {B, S, H});
}

Tensor encoder_layer(Builder& b, const ModelSettings& c, Tensor x, Tensor bias) {
  const ModelConfig& m = c.model;
  Tensor attention_out;
  {
    auto scope = b.scope("attention");
    Tensor projected = b.dropout(dense(b, self_attention(b, c, x, bias), m.hidden_size, "output.dense"),
                                 hidden_dropout(c));
    attention_out = layer_norm(b, projected + x, "output.LayerNorm", m.layer_norm_eps);
  }
  Tensor inner = gelu(dense(b, attention_out, m.intermediate_size, "intermediate.dense"));
  Tensor out = b.dropout(dense(b, inner, m.hidden_size, "output.dense"), hidden_dropout(c));
  return layer_norm(b, out + attention_out, "output.LayerNorm", m.layer_norm_eps);
}

Tensor pool(Builder& b, Tensor sequence_output, std::optional<Tensor> cls_positions) {
  const int64_t B = sequence_output.dim(0), H = sequence_output.dim(2);
  Tensor first_token = cls_positions
                           ? b.reshape(b.gather(sequence_output, *cls_positions, 1), {B * cls_positions->dim(1), H})
                           : b.reshape(b.slice(sequence_output, 1, 0, 1), {B, H});
  return tanh(dense(b, first_token, H, "bert.pooler.dense"));
}

Tensor encode(Builder& b, const ModelSettings& c, const Encoder& encoder, Tensor x, Tensor attention_bias) {
  for (int64_t i = 0; i < c.model.num_hidden_layers; ++i) {
    auto scope = b.scope(fmt::format("bert.encoder.layer.{}", i));
    x = encoder.layer(b, c, x, attention_bias);
  }
  return encoder.after ? encoder.after(b, c, x) : x;
}

PretrainingLosses pretraining_heads(Builder& b, const ModelSettings& c, Tensor sequence_output, Tensor word_embeddings,
                                    const BertInputs& in) {
  const ModelConfig& m = c.model;
  const int64_t B = sequence_output.dim(0), H = sequence_output.dim(2);
  const int64_t P = in.masked_lm_positions.dim(1);

  Tensor pooled = pool(b, sequence_output, in.rows ? std::optional<Tensor>(in.rows->cls_positions) : std::nullopt);

  // MLM logits only at the P masked positions: [B,P,V] instead of [B,S,V].
  Tensor masked = b.gather(sequence_output, in.masked_lm_positions, 1);
  Tensor logits;
  {
    auto scope = b.scope("cls.predictions");
    Tensor h = gelu(dense(b, masked, H, "transform.dense"));
    h = layer_norm(b, h, "transform.LayerNorm", m.layer_norm_eps);
    Tensor decoder_bias = b.param("bias", {m.vocab_size});
    logits = b.matmul(h, word_embeddings, false, true) + decoder_bias;
  }
  logits = b.name(b.reshape(logits, {B * P, m.vocab_size}), std::string(ir::names::kMlmLogits));
  Tensor labels = b.reshape(in.masked_lm_ids, {B * P});
  Tensor weights = b.reshape(in.masked_lm_weights, {B * P});
  Tensor mlm = b.cross_entropy(logits, labels, weights);

  Tensor nsp_logits = b.name(dense(b, pooled, 2, "cls.seq_relationship"), std::string(ir::names::kNspLogits));
  // (rows of several examples: the mean over the examples, empty slots weighing 0, as the mean over
  // a batch of one example a row)
  Tensor nsp;
  if (in.rows) {
    Tensor nsp_labels = b.reshape(in.next_sentence_labels, {nsp_logits.dim(0)});
    Tensor nsp_weights = b.reshape(in.rows->next_sentence_weights, {nsp_logits.dim(0)});
    nsp = b.cross_entropy(nsp_logits, nsp_labels, nsp_weights);
  } else {
    nsp = b.cross_entropy(nsp_logits, in.next_sentence_labels);
  }
  return {mlm, nsp, mlm + nsp};
}

ir::Graph build_pretraining_graph(const ModelSettings& c, const EncoderLayer& layer, const AfterEncoder& after) {
  Builder b(graph_name_for(c.name));
  const BertInputs in = add_pretraining_inputs(b, c.batch);
  const Embeddings emb = embeddings(b, c, in);
  const Tensor bias =
      attention_bias(b, in.attention_mask, in.rows ? std::optional<Tensor>(in.rows->example_ids) : std::nullopt);
  const Tensor x = encode(b, c, Encoder{layer, after}, emb.output, bias);
  const PretrainingLosses losses = pretraining_heads(b, c, x, emb.word_embeddings, in);
  b.output(losses.total, std::string(ir::names::kLoss));
  b.output(losses.mlm, std::string(ir::names::kMlmLoss));
  b.output(losses.nsp, std::string(ir::names::kNspLoss));
  return std::move(b).finish();
}

ir::Graph build_bert_pretraining(const ModelSettings& c) { return build_pretraining_graph(c, encoder_layer); }

ModelDefinition bert_model_definition() {
  return {"bert", "BERT for pretraining (MLM + NSP), as Hugging Face BertForPreTraining", build_bert_pretraining, {},
          Encoder{encoder_layer, {}}};
}

}  // namespace bertc::frontend
