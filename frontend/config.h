// Model, training and compile settings, loaded from a TOML file ([model] [train] [compile]).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace bertc::frontend {

// Hugging Face BertConfig names and meanings; the defaults are BERT-base.
struct ModelConfig {
  int64_t vocab_size = 30522;
  int64_t hidden_size = 768;
  int64_t num_hidden_layers = 12;
  int64_t num_attention_heads = 12;
  int64_t intermediate_size = 3072;
  int64_t max_position_embeddings = 512;
  int64_t type_vocab_size = 2;
  int64_t pad_token_id = 0;  // its word-embedding row gets no gradient (Hugging Face's padding_idx)
  double hidden_dropout_prob = 0.1;
  double attention_probs_dropout_prob = 0.1;
  double layer_norm_eps = 1e-12;
  double initializer_range = 0.02;

  int64_t head_size() const { return hidden_size / num_attention_heads; }
};

// Training: the batch, the optimizer and its schedule, checkpoints, and the data.
struct TrainConfig {
  // One micro-batch; an optimizer step sums gradient_accumulation_steps of them.
  int64_t batch_size = 32;
  int64_t seq_len = 128;
  int64_t max_predictions_per_seq = 20;
  int64_t gradient_accumulation_steps = 1;
  int64_t seed = 12345;
  int64_t steps = 1000;  // optimizer steps

  std::string optimizer = "adamw";  // adamw | lamb
  double learning_rate = 1e-4;
  int64_t warmup_steps = 0;          // linear warmup from 0
  std::string lr_decay = "linear";   // linear | polynomial | constant, after warmup
  double lr_decay_power = 1.0;       // polynomial: lr ~ (1 - progress)^power
  double end_learning_rate = 0.0;
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-6;
  double weight_decay = 0.01;        // not for biases and layer norms
  double max_grad_norm = 1.0;        // global-norm clipping; 0 turns it off

  int64_t checkpoint_every = 0;      // steps between checkpoints; 0: only at the end
  int64_t keep_checkpoints = 2;
  int64_t log_every = 10;            // steps between metric lines

  // Data (paths relative to the config file): text with one sentence a line and blank lines
  // between documents, and a WordPiece vocab.txt.
  std::string data = "data/corpus.txt";
  std::string vocab = "data/vocab.txt";
  bool do_lower_case = true;
  double masked_lm_prob = 0.15;
  double short_seq_prob = 0.1;
  int64_t dupe_factor = 5;  // passes over the corpus, each masked differently
};

// Every compiler option ([compile] in the config; each has a bertc compile/train flag too).
struct CompileOptions {
  bool dropout = true;             // false builds the graph without dropout ops (evaluation)
  std::string arch = "auto";       // sm_61 ... sm_90, a GPU name (p40, v100, t4, a100, rtx3090,
                                   // h100, h200), or auto: the GPU present, else none
  std::string precision = "auto";  // auto | fp32 | fp16 | bf16 | fp32-fp16storage
  std::string recompute = "none";  // none | selective | full | auto
  int64_t memory_budget = 0;       // bytes of activations for recompute = auto
  bool fusion = true;              // group ops into fused kernels
  bool fused_attention = true;     // one attention op instead of matmul, softmax, dropout, matmul
  std::string matmul = "auto";     // auto | generated | library: generated kernels or cuBLAS per
                                   // matmul (the rule: codegen/matrix_strategy.h)
  bool print_ir_after_all = false; // every stage's IR to stderr
  std::string dump_ir;             // folder for every stage's IR as NN-<pass>-<graph>.ir ("": none)
};

using ConfigValue = std::variant<bool, int64_t, double, std::string>;

// A [model] key that a custom model definition adds (see model.h).
struct ExtraKey {
  std::string name;
  ConfigValue default_value;  // also fixes the key's type
  std::string doc;
};

struct Config {
  std::string source;  // file it came from, for messages
  std::string name;    // top-level `name`, else the file's stem
  ModelConfig model;
  TrainConfig train;
  CompileOptions compile;
  std::map<std::string, ConfigValue> extra;  // values of the model definition's ExtraKeys

  // A custom model's extra key; throws ConfigError when absent or of another type.
  template <typename T>
  T extra_value(const std::string& key) const;
  // A path from the config, resolved against the config file's folder when relative.
  std::filesystem::path resolve(const std::string& path) const;
};

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads and checks a config file. Errors name the file, line and column, the key and the fix.
Config load_config(const std::filesystem::path& path, std::span<const ExtraKey> extra_keys = {});
// The same from text; `source` is the name shown in messages.
Config parse_config(std::string_view toml_text, const std::string& source,
                    std::span<const ExtraKey> extra_keys = {});

// Checks relations between keys (hidden divisible by heads, sequence within positions, ...).
void validate(const Config& config);

template <typename T>
T Config::extra_value(const std::string& key) const {
  auto it = extra.find(key);
  if (it == extra.end() || !std::holds_alternative<T>(it->second))
    throw ConfigError("model definition asked for [model] " + key + ", which it did not declare with that type");
  return std::get<T>(it->second);
}

}  // namespace bertc::frontend
