// One forward and backward pass on a given batch with dropout off: the losses and every param's
// gradient. This is how bertc is compared with other implementations (bertc eval).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "data/vocab_identity.h"
#include "frontend/model.h"
#include "run_config/config.h"
#include "support/tensor_io.h"

namespace bertc::train {

struct EvalResult {
  // The losses the graph outputs, in print order: mlm_loss, nsp_loss, loss for pretraining; loss
  // for a fine-tuning config.
  std::vector<std::pair<std::string, double>> losses;
  std::map<std::string, support::HostTensor> gradients;  // by Hugging Face param name
  // The logits the graph makes: "logits" (a fine-tuning head's), or "mlm_logits" ([B*P, vocab])
  // and "nsp_logits" ([B, 2]) for pretraining.
  std::map<std::string, support::HostTensor> logits;
  // The vocabulary the batch records (bertc batch writes it), checked against the weights'.
  std::optional<data::VocabRecord> vocab;
  // What the weights held that the model has not (checkpoint.h's init_notes), to be said.
  std::vector<std::string> notes;
};

// `config`'s batch shape is replaced by the batch file's (input_ids [B,S], and for pretraining
// masked_lm_positions [B,P]); `weights` is a safetensors file with every param (a bertc checkpoint
// or a Hugging Face BertForPreTraining, BertForSequenceClassification or
// BertForTokenClassification file). The batch file holds every input of the model's graph:
// input_ids, token_type_ids, attention_mask and, for pretraining, masked_lm_positions,
// masked_lm_ids, masked_lm_weights and next_sentence_labels, or for a [finetune] config labels and
// label_weights; in any integer (weights, regression labels: any float) dtype.
EvalResult evaluate_batch(const frontend::ModelDefinition& model, run_config::Config config,
                          const std::filesystem::path& weights, const std::filesystem::path& batch);

}  // namespace bertc::train
