// Task heads on a model's encoder (see finetune.h); parameter names are Hugging Face's.
#include "frontend/finetune.h"

#include <fmt/format.h>

#include "frontend/bert.h"
#include "ir/value_names.h"
#include "ir/verifier.h"

namespace bertc::frontend {
namespace {

namespace names = ir::names;

// sum(weights * per_item) / sum(weights): the mean over what counts.
Tensor weighted_mean(Builder& b, Tensor per_item, Tensor weights) {
  return b.reduce_sum(per_item * weights, {0}) / b.reduce_sum(weights, {0});
}

}  // namespace

ir::Graph build_finetune_graph(const ModelDefinition& model, const ModelSettings& c) {
  if (!model.encoder.layer)
    throw ConfigError(fmt::format("model '{}' names no encoder for fine-tuning: its ModelDefinition needs "
                                  "Encoder{{layer, after}} (see examples/prenorm_bert)",
                                  model.name));
  if (!c.head) throw ConfigError(fmt::format("model '{}': a fine-tuning graph needs a task head", model.name));
  const TaskHead& f = *c.head;
  const int64_t B = c.batch.batch_size, S = c.batch.seq_len, L = f.num_labels;
  const bool tokens = f.task == FinetuneTask::TokenClassification;
  Builder b(graph_name_for(c.name));
  const Tensor input_ids = b.input("input_ids", DType::I32, {B, S});
  const Tensor token_type_ids = b.input("token_type_ids", DType::I32, {B, S});
  const Tensor attention_mask = b.input("attention_mask", DType::I32, {B, S});
  const Shape label_shape = tokens ? Shape{B, S} : Shape{B};
  const DType label_type = f.task == FinetuneTask::Regression ? DType::F32 : DType::I32;
  const Tensor labels = b.input(std::string(names::kLabels), label_type, label_shape);
  const Tensor weights = b.input(std::string(names::kLabelWeights), DType::F32, label_shape);

  const Embeddings emb = embeddings(b, c, input_ids, token_type_ids);
  const Tensor x = encode(b, c, model.encoder, emb.output, attention_bias(b, attention_mask));
  const std::string logits_name(names::kLogits);
  Tensor loss, logits;
  if (tokens) {
    logits = b.reshape(dense(b, b.dropout(x, hidden_dropout(c)), L, "classifier"), {B * S, L});
    loss = b.cross_entropy(logits, b.reshape(labels, {B * S}), b.reshape(weights, {B * S}));
  } else if (f.task == FinetuneTask::Regression) {
    Tensor pooled = b.dropout(pool(b, x), hidden_dropout(c));
    // In f32 whatever the activations' precision (as autocast computes mse_loss): a bf16 error
    // would round the targets themselves.
    logits = b.cast(b.reshape(dense(b, pooled, 1, "classifier"), {B}), DType::F32);
    const Tensor error = logits - labels;
    loss = weighted_mean(b, error * error, weights);
  } else {
    Tensor pooled = b.dropout(pool(b, x), hidden_dropout(c));
    logits = dense(b, pooled, L, "classifier");
    loss = b.cross_entropy(logits, labels, weights);
  }
  b.output(loss, std::string(names::kLoss));
  // An output, not a fetched value: evaluation reads it from a graph whose fusion would otherwise
  // keep it inside the loss's kernel.
  b.output(logits, logits_name);
  ir::Graph graph = std::move(b).finish();
  ir::verify_or_throw(graph);
  return graph;
}

}  // namespace bertc::frontend
