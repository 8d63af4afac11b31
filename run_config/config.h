// A run's settings, loaded from a TOML file ([model] [train] [compile] [finetune]); every key is
// declared once (frontend/model_keys.def, config.def, passes/options.def). The layer above the
// model builders, the passes and the distributed code, whose settings it gathers.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "distributed/compression.h"
#include "frontend/model.h"
#include "frontend/model_settings.h"
#include "ir/enum_names.h"
#include "passes/options.h"

namespace bertc::run_config {

using frontend::ConfigError;
using frontend::ConfigValue;
using frontend::ExtraKey;
using frontend::FinetuneTask;
using frontend::ModelConfig;

// The most sequences one optimizer step may take (batch_size x gradient_accumulation_steps, times
// the data-parallel ranks of a compiled program).
inline constexpr int64_t kMostSequencesAStep = int64_t{1} << 31;

enum class LrDecay { Linear, Polynomial, Constant };
BERTC_ENUM_NAMES(LrDecay, {LrDecay::Linear, "linear"}, {LrDecay::Polynomial, "polynomial"},
                 {LrDecay::Constant, "constant"})

// Pretraining rows: one example each, padded to seq_len, or several whole examples side by side
// (data/row_packing.h), each attending to itself alone.
enum class Packing { None, Pack };
BERTC_ENUM_NAMES(Packing, {Packing::None, "none"}, {Packing::Pack, "pack"})

// The dev-set figures of a fine-tuning run, and which one picks its best checkpoint.
enum class TaskMetric { Auto, Accuracy, F1, Mcc, Pearson, Spearman };
BERTC_ENUM_NAMES(TaskMetric, {TaskMetric::Auto, "auto"}, {TaskMetric::Accuracy, "accuracy"}, {TaskMetric::F1, "f1"},
                 {TaskMetric::Mcc, "mcc"}, {TaskMetric::Pearson, "pearson"}, {TaskMetric::Spearman, "spearman"})

// [train]: the batch, the optimizer (its keys are the optimizer pass's options) and its schedule,
// checkpoints, and the data. One micro-batch is batch_size sequences; an optimizer step sums
// gradient_accumulation_steps of them.
struct TrainConfig : passes::OptimizerOptions {
#define BERTC_TRAIN_KEY(member, Type, default_value, ...) Type member = default_value;
#define BERTC_FINETUNE_KEY(...)
#include "run_config/config.def"
#undef BERTC_FINETUNE_KEY
#undef BERTC_TRAIN_KEY
  // Examples a row: packing_max_examples with packing = "pack", else 0 (one a row, unpacked).
  int64_t examples_per_row() const { return packing == Packing::Pack ? packing_max_examples : 0; }
  // Masked positions a row: max_predictions_per_seq, or, for rows of K examples, room for what
  // BERT's masking gives K examples sharing seq_len (data/row_packing.h: row_predictions).
  int64_t row_predictions() const;
};

// [finetune]: the task a fine-tuning run learns (bertc finetune), its data and its evaluation.
struct FinetuneConfig {
#define BERTC_TRAIN_KEY(...)
#define BERTC_FINETUNE_KEY(member, Type, default_value, ...) Type member = default_value;
#include "run_config/config.def"
#undef BERTC_FINETUNE_KEY
#undef BERTC_TRAIN_KEY

  // The label names in class order (`labels` split at commas; empty when labels are numbers).
  std::vector<std::string> label_names() const;
  // The compiled sequence lengths, rising; the last is `seq_len`.
  std::vector<int64_t> buckets(int64_t seq_len, int64_t max_positions = 0) const;
  // `best_metric` with auto resolved for the task.
  TaskMetric chosen_metric() const;
};

using passes::CompileOptions;

struct Config {
  std::string source;  // file it came from, for messages
  std::string name;    // top-level `name`, else the file's stem
  ModelConfig model;
  TrainConfig train;
  CompileOptions compile;
  FinetuneConfig finetune;     // set by a [finetune] section (finetune_section)
  std::map<std::string, ConfigValue> extra;  // values of the model definition's ExtraKeys
  bool model_section = false;  // whether the text has a [model] table (load_config requires one)
  // Where config.model came from when not the text (hf_config.h's take_model_from): a folder's
  // config.json, or a checkpoint's model record ("PATH (its model record)"); empty: the text.
  std::string model_from;
  bool finetune_section = false;  // whether it has a [finetune] table: a fine-tuning config
  std::set<std::string> given;    // the "section.key"s the text sets (the rest are defaults)
  std::map<std::string, std::string> given_at;  // where each is set: "section.key" -> "LINE:COLUMN"
  bool from_stream = false;  // read from a pipe or a device (/dev/stdin), which has no folder of its own

  // What the model builders read of it: [model], the extra keys, the batch shape, [compile]
  // dropout, and the task head of a [finetune] config.
  frontend::ModelSettings model_settings() const;
  // A path from the config, resolved against the config file's folder when relative (against the
  // working directory for a config read from a stream: /dev/stdin's folder, /dev, is none of its).
  std::filesystem::path resolve(const std::string& path) const;
};

// Every key a config may set: [model] (frontend/model_keys.def), [train] and [finetune]
// (config.def), the optimizer's [train] keys and [compile] (passes/options.def); what the loader accepts and documentation lists.
const std::vector<support::OptionSpec<Config>>& config_keys();

// A run's settings as a checkpoint records them ("config_settings"): a line "[section] key=value"
// per key of config_keys() that `kept` selects, then the model's extra keys as [model] lines; and
// such a text read back, keyed "[section] key". Resume compares them; a model record is checked
// against its [model] lines.
std::string settings_text(const Config& c, const std::function<bool(std::string_view section, std::string_view key)>& kept);
std::map<std::string, std::string> settings_of_text(const std::string& text);

// Reads and checks a config file. Errors name the file, line and column, the key and the fix.
// A config must have a [model] section unless `model_required` is false: its model may then come
// from elsewhere (a Hugging Face folder's config.json: hf_config.h's take_model_from, which also
// checks the relations between keys that a config without [model] could not be checked for).
Config load_config(const std::filesystem::path& path, std::span<const ExtraKey> extra_keys = {},
                   bool model_required = true);
// A config for a command that makes data (bertc batch, vocab, prepare-data): one without [model]
// is taken (a fine-tuning config of a Hugging Face folder's or a checkpoint's model has none), its
// relations checked against BERT-base's [model] then, which bounds the vocabulary (30522 tokens,
// [PAD] id 0) and seq_len (512): a larger model's config names its [model].
Config load_data_config(const std::filesystem::path& path, std::span<const ExtraKey> extra_keys = {});
// The same from text; `source` is the name shown in messages. Relations between keys are checked
// when `check_relations` (a config whose [model] may come from elsewhere is checked once it has
// come: hf_config.h's take_model_from).
Config parse_config(std::string_view toml_text, const std::string& source,
                    std::span<const ExtraKey> extra_keys = {}, bool check_relations = true);

// Checks relations between keys (hidden divisible by heads, sequence within positions, ...),
// naming the file, line and column of the key to change where the text sets it.
// `origin`: where config.model came from when not the config's text (a Hugging Face folder's
// config.json, a checkpoint's record), which a problem of the model's own keys then names, with
// its own fix (a folder is corrected, a checkpoint's record was damaged).
struct ModelOrigin {
  std::string source;  // "" for the config's own [model]
  std::string fix;
};
void validate(const Config& config, const ModelOrigin& origin = {});
// Why [train] zero_stage cannot be as `config` sets it ("" where it can): validate() says it of the
// config as written, and a run asks again once precision "auto" is resolved for its GPU (fp16 on
// sm_70 and sm_75, which ZeRO stage 1 refuses).
std::string zero_stage_issue(const Config& config);
// The model's own relations alone (hidden divisible by heads, pad_token_id within the vocabulary)
// of a model read from `origin` (a checkpoint's record export turns into a config.json).
void validate_model(const ModelConfig& model, const ModelOrigin& origin);

}  // namespace bertc::run_config
