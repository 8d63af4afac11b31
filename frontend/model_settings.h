// What a model builder reads: the [model] keys (model_keys.def), a custom model's extra keys, the
// batch shape its inputs take, whether dropout is on, and a fine-tuning graph's task head. The run
// config (run_config/) makes these from a TOML file; the builders know nothing else of a run.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>

#include "ir/enum_names.h"
#include "support/options.h"

namespace bertc::frontend {

// [model]: the network (model_keys.def).
struct ModelConfig {
#define BERTC_MODEL_KEY(member, Type, default_value, ...) Type member = default_value;
#include "frontend/model_keys.def"
#undef BERTC_MODEL_KEY

  int64_t head_size() const { return hidden_size / num_attention_heads; }
};

// What a fine-tuning head predicts (Hugging Face's BertFor<task>).
enum class FinetuneTask { SequenceClassification, Regression, TokenClassification };
BERTC_ENUM_NAMES(FinetuneTask, {FinetuneTask::SequenceClassification, "sequence-classification"},
                 {FinetuneTask::Regression, "regression"}, {FinetuneTask::TokenClassification, "token-classification"})

// A setting a model cannot be built with (a key it did not declare, a head without an encoder).
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using ConfigValue = support::OptionValue;

// The shape of one micro-batch: the graph's inputs are [batch_size, seq_len] tokens and
// [batch_size, max_predictions_per_seq] masked positions. Its defaults (BERT-base's) are the
// [train] keys' too (run_config/config.def reads them here). With examples_per_row = K > 0, a row
// holds up to K whole examples side by side (pretraining only), and the graph takes what keeps
// them apart (frontend/bert.h: BertInputs); max_predictions_per_seq is then a row's.
struct BatchShape {
  int64_t batch_size = 32;
  int64_t seq_len = 128;
  int64_t max_predictions_per_seq = 20;
  int64_t examples_per_row = 0;  // 0: one example a row (the graph of Hugging Face's inputs)
};

// A fine-tuning graph's head (finetune.h).
struct TaskHead {
  FinetuneTask task = FinetuneTask::SequenceClassification;
  int64_t num_labels = 2;
};

struct ModelSettings {
  std::string name;  // the config's name; the graph is named graph_name_for(name)
  ModelConfig model;
  std::map<std::string, ConfigValue> extra;  // values of the model definition's ExtraKeys
  BatchShape batch;
  bool dropout = true;            // false: every dropout probability taken as 0 (evaluation)
  std::optional<TaskHead> head;   // set: the fine-tuning graph with this head; none: pretraining

  // A custom model's extra key; throws ConfigError when absent or of another type.
  template <typename T>
  T extra_value(const std::string& key) const {
    auto it = extra.find(key);
    if (it == extra.end() || !std::holds_alternative<T>(it->second))
      throw ConfigError("model definition asked for [model] " + key + ", which it did not declare with that type");
    return std::get<T>(it->second);
  }
};

}  // namespace bertc::frontend
