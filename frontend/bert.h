// BERT for pretraining (Hugging Face BertForPreTraining), written in the DSL, and the building
// blocks a custom BERT variant reuses. Parameter names are Hugging Face's.
#pragma once

#include <functional>
#include <optional>

#include "ir/builder.h"
#include "frontend/model_settings.h"
#include "frontend/model.h"

namespace bertc::frontend {

// What keeps a row's examples apart when it holds up to K of them side by side
// (BatchShape::examples_per_row; data/row_batch.h makes them).
struct RowInputs {
  Tensor position_ids;           // i32[B,S]: each token's position within its example
  Tensor example_ids;            // i32[B,S]: each token's example, 0..K-1 (K for padding)
  Tensor cls_positions;          // i32[B,K]: each example's [CLS]
  Tensor next_sentence_weights;  // f32[B,K]: 1 an example, 0 an empty slot
};

// One pretraining batch, in the original BERT data format. P = max_predictions_per_seq.
struct BertInputs {
  Tensor input_ids;             // i32[B,S]
  Tensor token_type_ids;        // i32[B,S]
  Tensor attention_mask;        // i32[B,S]: 1 real token, 0 padding
  Tensor masked_lm_positions;   // i32[B,P] (in rows of several examples: numbered in the row)
  Tensor masked_lm_ids;         // i32[B,P]
  Tensor masked_lm_weights;     // f32[B,P]: 1 real prediction, 0 padding
  Tensor next_sentence_labels;  // i32[B]: 0 is-next, 1 random ([B,K] in rows of several examples)
  std::optional<RowInputs> rows;  // set when batch.examples_per_row > 0
};
BertInputs add_pretraining_inputs(Builder& b, const BatchShape& batch);

// Dropout probabilities in effect (settings.dropout = false, [compile] dropout = false, turns them all off).
double hidden_dropout(const ModelSettings& c);
double attention_dropout(const ModelSettings& c);

// x @ weight^T + bias, with params "<name>.weight" [out, in] and "<name>.bias" [out].
Tensor dense(Builder& b, Tensor x, int64_t out_features, std::string_view name);
// Layer norm over the last axis with params "<name>.weight" and "<name>.bias".
Tensor layer_norm(Builder& b, Tensor x, std::string_view name, double eps);

struct Embeddings {
  Tensor output;           // f32[B,S,H]
  Tensor word_embeddings;  // the table, tied to the MLM decoder
};
// word + token type + position embeddings, layer norm, dropout (params under bert.embeddings), of
// input_ids and token_type_ids [B,S]; positions 0..S-1, or `position_ids` [B,S] where given.
Embeddings embeddings(Builder& b, const ModelSettings& c, Tensor input_ids, Tensor token_type_ids,
                      std::optional<Tensor> position_ids = std::nullopt);
Embeddings embeddings(Builder& b, const ModelSettings& c, const BertInputs& in);

// The additive attention bias [B,1,1,S]: 0 for real tokens, -10000 for padding. With
// `example_ids` [B,S] (rows of several examples), [B,1,S,S]: also -10000 between tokens of two
// examples (block_bias), so that each example attends to itself alone, as it would in a row of
// its own.
Tensor attention_bias(Builder& b, Tensor attention_mask, std::optional<Tensor> example_ids = std::nullopt);

// Scaled dot-product self-attention with the QKV projection fused into one matmul (query, key and
// value keep their own parameters "self.query.*" ...); returns the merged heads [B,S,H] before the
// output projection. Params are named relative to the current scope.
Tensor self_attention(Builder& b, const ModelSettings& c, Tensor x, Tensor bias);

// One post-layer-norm BERT encoder layer (in scope bert.encoder.layer.N).
Tensor encoder_layer(Builder& b, const ModelSettings& c, Tensor x, Tensor bias);

struct PretrainingLosses {
  Tensor mlm;    // mean cross-entropy over real masked positions
  Tensor nsp;    // mean cross-entropy over the batch's examples
  Tensor total;  // mlm + nsp
};
// Pooler, MLM head (at masked positions only, decoder tied to the word embeddings) and NSP head.
PretrainingLosses pretraining_heads(Builder& b, const ModelSettings& c, Tensor sequence_output, Tensor word_embeddings,
                                    const BertInputs& in);

// num_hidden_layers layers of `encoder` on x (in scopes bert.encoder.layer.N), then its `after`.
Tensor encode(Builder& b, const ModelSettings& c, const Encoder& encoder, Tensor x, Tensor attention_bias);

// The pooler: tanh(dense) of the first token's vector ([B,S,H] -> [B,H], params bert.pooler.dense);
// with `cls_positions` [B,K], of each example's [CLS] ([B,S,H] -> [B*K,H]).
Tensor pool(Builder& b, Tensor sequence_output, std::optional<Tensor> cls_positions = std::nullopt);

// Inputs, embeddings, num_hidden_layers encoder layers, pretraining heads; outputs loss,
// mlm_loss and nsp_loss.
ir::Graph build_pretraining_graph(const ModelSettings& c, const EncoderLayer& layer, const AfterEncoder& after = {});

// The whole BertForPreTraining graph (post-layer-norm encoder_layer).
ir::Graph build_bert_pretraining(const ModelSettings& c);
// bertc's own model: BERT (build_bert_pretraining, encoder_layer as its encoder).
ModelDefinition bert_model_definition();

}  // namespace bertc::frontend
