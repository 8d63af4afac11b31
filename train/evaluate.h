// One forward and backward pass on a given batch with dropout off: the losses and every param's
// gradient. This is how bertc is compared with other implementations (bertc eval).
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "frontend/model.h"
#include "support/tensor_io.h"

namespace bertc::train {

struct EvalResult {
  double loss = 0, mlm_loss = 0, nsp_loss = 0;
  std::map<std::string, support::HostTensor> gradients;  // by Hugging Face param name
};

// `config`'s batch shape is replaced by the batch file's (input_ids [B,S], masked_lm_positions
// [B,P]); `weights` is a safetensors file with every param (a bertc checkpoint or a Hugging Face
// BertForPreTraining file). The batch file holds input_ids, token_type_ids, attention_mask,
// masked_lm_positions, masked_lm_ids, masked_lm_weights and next_sentence_labels, in any integer
// (weights: any float) dtype.
EvalResult evaluate_batch(const frontend::ModelDefinition& model, frontend::Config config,
                          const std::filesystem::path& weights, const std::filesystem::path& batch);

}  // namespace bertc::train
