// Fine-tuning graphs: a model's encoder with a task head, as Hugging Face's
// BertForSequenceClassification (classification and regression) and BertForTokenClassification.
#pragma once

#include "frontend/model_settings.h"
#include "frontend/model.h"
#include "ir/graph.h"

namespace bertc::frontend {

// The graph bertc finetune trains for settings.head (which must be set), batch
// settings.batch's batch_size x seq_len:
//   inputs  input_ids, token_type_ids, attention_mask i32[B,S]; labels (i32[B] classes, f32[B]
//           regression targets, i32[B,S] token tags); label_weights (f32[B], or f32[B,S] for tags:
//           1 counts, 0 padding, so that a short last batch or a word's later pieces count for
//           nothing);
//   heads   sequence: pooler (bert.pooler.dense), dropout, `classifier` [num_labels, H];
//           token: dropout, `classifier` on every position;
//   outputs loss (cross-entropy, or mean squared error for regression, averaged over weight), then
//           logits ([B,L]; [B] regression; [B*S,L] tokens), in that order.
// Dropout is hidden_dropout_prob (off when settings.dropout is false, as for evaluation). Throws
// ConfigError when the model definition has no encoder to put the head on.
ir::Graph build_finetune_graph(const ModelDefinition& model, const ModelSettings& settings);

}  // namespace bertc::frontend
