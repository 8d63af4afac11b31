// TOML config loading with toml++: every key known, typed and range-checked, errors located.
#include "run_config/config.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <cstdlib>
#include <memory>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <toml++/toml.h>
#include <utf8proc.h>

#include "support/bounded_read.h"
#include "support/file_errors.h"

namespace bertc::run_config {
namespace {

using support::OptionSpec;
using support::OptionValue;
using support::ValueKind;

// The specs of a part of Config (its [model], [train] or [compile] struct) as specs of the whole;
// `part` maps a Config (const or not) to the part.
template <typename S, typename Part>
void add_part(std::vector<OptionSpec<Config>>& out, const std::vector<OptionSpec<S>>& specs, Part part) {
  for (const OptionSpec<S>& s : specs) {
    OptionSpec<Config> c{s.section, s.key, s.doc, s.kind, s.choices, s.scope, s.pass_keys, {}, {}, s.default_text};
    c.get = [s, part](const Config& config) { return s.get(part(config)); };
    c.set = [s, part](Config& config, const OptionValue& v) { return s.set(part(config), v); };
    out.push_back(std::move(c));
  }
}

std::vector<OptionSpec<ModelConfig>> model_specs() {
  return {
#define BERTC_MODEL_KEY(member, Type, default_value, check, doc) \
  BERTC_OPTION_SPEC(ModelConfig, "model", member, Type, default_value, check, Program, "", doc),
#include "frontend/model_keys.def"
#undef BERTC_MODEL_KEY
  };
}

std::vector<OptionSpec<TrainConfig>> train_specs() {
  return {
#define BERTC_TRAIN_KEY(member, Type, default_value, check, doc) \
  BERTC_OPTION_SPEC(TrainConfig, "train", member, Type, default_value, check, Program, "", doc),
#define BERTC_FINETUNE_KEY(...)
#include "run_config/config.def"
#undef BERTC_FINETUNE_KEY
#undef BERTC_TRAIN_KEY
  };
}

std::vector<OptionSpec<FinetuneConfig>> finetune_specs() {
  return {
#define BERTC_TRAIN_KEY(...)
#define BERTC_FINETUNE_KEY(member, Type, default_value, check, doc) \
  BERTC_OPTION_SPEC(FinetuneConfig, "finetune", member, Type, default_value, check, Program, "", doc),
#include "run_config/config.def"
#undef BERTC_FINETUNE_KEY
#undef BERTC_TRAIN_KEY
  };
}

}  // namespace

const std::vector<OptionSpec<Config>>& config_keys() {
  static const std::vector<OptionSpec<Config>> keys = [] {
    std::vector<OptionSpec<Config>> k;
    add_part(k, model_specs(), [](auto& c) -> auto& { return c.model; });
    add_part(k, train_specs(), [](auto& c) -> auto& { return c.train; });
    add_part(k, passes::optimizer_option_specs(), [](auto& c) -> auto& { return c.train; });
    add_part(k, passes::compile_option_specs(), [](auto& c) -> auto& { return c.compile; });
    add_part(k, finetune_specs(), [](auto& c) -> auto& { return c.finetune; });
    return k;
  }();
  return keys;
}

std::string settings_text(const Config& c, const std::function<bool(std::string_view section, std::string_view key)>& kept) {
  std::string text;
  for (const auto& spec : config_keys())
    if (kept(spec.section, spec.key))
      text += fmt::format("[{}] {}={}\n", spec.section, spec.key, support::value_text(spec.get(c)));
  for (const auto& [key, value] : c.extra) text += fmt::format("[model] {}={}\n", key, support::value_text(value));
  return text;
}

std::map<std::string, std::string> settings_of_text(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (const size_t eq = line.find('='); eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  return out;
}

namespace {

constexpr std::string_view kSections[] = {"model", "train", "compile", "finetune"};

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

class Loader {
 public:
  Loader(Config& config, std::span<const ExtraKey> extra_keys) : c_(config), extra_keys_(extra_keys) {
    for (const auto& k : extra_keys_) c_.extra[k.name] = k.default_value;
  }

  void load(const toml::table& root) {
    for (const auto& [key, node] : root) {
      const std::string k(key.str());
      if (k == "name") {
        set_string(node, "name", c_.name);
      } else if (std::find(std::begin(kSections), std::end(kSections), k) != std::end(kSections)) {
        const toml::table* table = node.as_table();
        if (!table) fail(node, fmt::format("'{}' must be a table: write it as [{}]", k, k));
        if (k == "model") c_.model_section = true;
        if (k == "finetune") c_.finetune_section = true;
        for (const auto& [sub, value] : *table) set_key(k, sub, value);
      } else {
        fail(key.source(), fmt::format("unknown top-level key '{}'{} (expected name, [model], [train], [compile] or [finetune])",
                                       k, suggestion(k, {"name", "model", "train", "compile", "finetune"})));
      }
    }
  }

 private:
  [[noreturn]] void fail(const toml::source_region& src, const std::string& message) const {
    throw ConfigError(fmt::format("{}:{}:{}: {}", c_.source, src.begin.line, src.begin.column, message));
  }
  [[noreturn]] void fail(const toml::node& node, const std::string& message) const { fail(node.source(), message); }

  static std::string suggestion(std::string_view key, const std::vector<std::string>& known) {
    std::string best;
    size_t best_distance = 3;  // suggest only close spellings
    for (const auto& k : known)
      if (size_t d = edit_distance(key, k); d < best_distance) best_distance = d, best = k;
    return best.empty() ? "" : fmt::format("; did you mean '{}'?", best);
  }

  void set_string(const toml::node& node, const std::string& key, std::string& out) const {
    if (!node.is_string()) fail(node, fmt::format("'{}' must be a string", key));
    out = text_of(node, key);
  }

  // A string value: no NUL in it (a path would end there, naming another file, and a message
  // quoting it would be cut).
  std::string text_of(const toml::node& node, const std::string& where) const {
    std::string text = *node.value<std::string>();
    if (text.find('\0') != std::string::npos)
      fail(node, fmt::format("{} holds a NUL character (\\u0000): remove it", where));
    return text;
  }

  // A string value of a key: never "" or spaces, whatever the key (an unset variable in a
  // script: data = "" was found missing after the compile, init = "" fine-tuned fresh weights
  // silently, dev_data = "" evaluated nothing); a key's empty meaning is had by leaving it out.
  std::string named_text_of(const toml::node& node, const std::string& where, const std::string& default_text) const {
    std::string text = text_of(node, where);
    if (text.find_first_not_of(" \t") == std::string::npos) {
      fail(node, fmt::format("{} = \"{}\": an empty value (an unset variable in a script?): give a value, or remove "
                             "the key {}",
                             where, text,
                             default_text.empty() ? "to leave it unset" : fmt::format("for its default, \"{}\"", default_text)));
    }
    return text;
  }

  void set_key(const std::string& section, const toml::key& toml_key, const toml::node& node) {
    const std::string key(toml_key.str());
    const std::string where = fmt::format("[{}] {}", section, key);
    for (const OptionSpec<Config>& spec : config_keys())
      if (spec.section == section && spec.key == key) return assign(spec, where, node);
    if (section == "model")
      for (const ExtraKey& k : extra_keys_)
        if (k.name == key) return assign_extra(k, where, node);
    std::vector<std::string> known;
    for (const OptionSpec<Config>& spec : config_keys())
      if (spec.section == section) known.emplace_back(spec.key);
    if (section == "model")
      for (const ExtraKey& k : extra_keys_) known.push_back(k.name);
    fail(toml_key.source(), fmt::format("unknown key '{}' in [{}]{}", key, section, suggestion(key, known)));
  }

  // The node as a value of the key's kind (an integer where a number is expected is accepted),
  // checked and set by the key's spec.
  void assign(const OptionSpec<Config>& spec, const std::string& where, const toml::node& node) const {
    std::optional<OptionValue> value;
    if (spec.kind == ValueKind::Int && node.is_integer()) value = *node.value<int64_t>();
    if (spec.kind == ValueKind::Float && node.is_integer()) value = *node.value<int64_t>();
    if (spec.kind == ValueKind::Float && node.is_floating_point()) value = *node.value<double>();
    if (spec.kind == ValueKind::Bool && node.is_boolean()) value = *node.value<bool>();
    if (spec.kind == ValueKind::String && node.is_string()) value = named_text_of(node, where, spec.default_text);
    if (!value)
      fail(node, fmt::format("{} must be {}, found {}", where, support::kind_description(spec.kind), describe(node)));
    if (auto problem = spec.set(c_, *value)) fail(node, fmt::format("{} {}", where, *problem));
    c_.given.insert(fmt::format("{}.{}", spec.section, spec.key));
    c_.given_at[fmt::format("{}.{}", spec.section, spec.key)] =
        fmt::format("{}:{}", node.source().begin.line, node.source().begin.column);
  }

  void assign_extra(const ExtraKey& k, const std::string& where, const toml::node& node) {
    ConfigValue& out = c_.extra[k.name];
    if (std::holds_alternative<bool>(k.default_value) && node.is_boolean()) out = *node.value<bool>();
    else if (std::holds_alternative<int64_t>(k.default_value) && node.is_integer()) out = *node.value<int64_t>();
    else if (std::holds_alternative<double>(k.default_value) && node.is_number()) out = *node.value<double>();
    else if (std::holds_alternative<std::string>(k.default_value) && node.is_string())
      out = named_text_of(node, where, std::get<std::string>(k.default_value));
    else fail(node, fmt::format("{} has the wrong type ({}); {}", where, describe(node), k.doc));
  }

  static std::string describe(const toml::node& node) {
    std::ostringstream s;
    s << node.type();
    if (node.is_value()) {
      s << " ";
      node.visit([&](const auto& v) { s << v; });
    }
    return s.str();
  }

  Config& c_;
  std::span<const ExtraKey> extra_keys_;
};

}  // namespace

namespace {

// A problem between keys, attributed to the key a user should change.
struct RelationIssue {
  std::string section, key, message;
};

// Comma-separated items, each trimmed of spaces; empty for an empty text.
std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  if (text.find_first_not_of(' ') == std::string::npos) return out;
  size_t begin = 0;
  while (true) {
    const size_t end = std::min(text.find(',', begin), text.size());
    std::string item = text.substr(begin, end - begin);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    out.push_back(item);
    if (end == text.size()) return out;
    begin = end + 1;
  }
}

// The [finetune] keys against each other and [train].
std::optional<RelationIssue> check_finetune(const FinetuneConfig& f, const TrainConfig& t, int64_t max_positions,
                                            bool num_labels_given) {
  auto issue = [](std::string key, std::string message) {
    return RelationIssue{"finetune", std::move(key), "[finetune] " + std::move(message)};
  };
  const bool regression = f.task == FinetuneTask::Regression;
  if (regression && f.num_labels != 1)
    return issue("num_labels", fmt::format("num_labels = {}: regression predicts one number; set num_labels = 1",
                                           f.num_labels));
  if (!regression && f.num_labels < 2)
    return issue("num_labels", fmt::format("num_labels = {}: {} needs 2 classes at least (regression predicts one "
                                           "number: task = \"regression\")",
                                           f.num_labels, ir::enum_name(f.task)));
  const std::vector<std::string> names = f.label_names();
  if (regression && !names.empty()) return issue("labels", "labels names classes; regression has none: remove it");
  // (one name: its count of 1 is refused next, and the fix it gave was refused after that)
  if (!regression && names.size() == 1)
    return issue("labels", fmt::format("labels names one class ('{}'), and {} needs 2 at least: name every class "
                                       "(labels = \"{},...\"), or predict a number with task = \"regression\"",
                                       names[0], ir::enum_name(f.task), names[0]));
  // (attributed to num_labels where the config leaves it out: its default of 2 was read as set)
  if (!names.empty() && static_cast<int64_t>(names.size()) != f.num_labels)
    return num_labels_given ? issue("labels", fmt::format("labels names {} classes and num_labels is {}: make them agree",
                                                          names.size(), f.num_labels))
                            : issue("num_labels", fmt::format("labels names {} classes and num_labels is {}: set "
                                                              "num_labels = {}",
                                                              names.size(), f.num_labels, names.size()));
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].empty()) return issue("labels", fmt::format("labels: name {} is empty", i + 1));
    if (std::find(names.begin(), names.begin() + i, names[i]) != names.begin() + i)
      return issue("labels", fmt::format("labels: '{}' is named twice", names[i]));
  }
  if (f.task == FinetuneTask::TokenClassification && !f.text_b.empty())
    return issue("text_b", "text_b pairs sentences; token-classification tags the words of one text: remove it");
  const TaskMetric m = f.chosen_metric();
  const bool correlation = m == TaskMetric::Pearson || m == TaskMetric::Spearman;
  if (correlation != regression)
    return issue("best_metric", fmt::format("best_metric = \"{}\" is not a figure of {} (regression: pearson or "
                                            "spearman; classification: accuracy, f1 or mcc)",
                                            ir::enum_name(f.best_metric), ir::enum_name(f.task)));
  try {
    (void)f.buckets(t.seq_len, max_positions);
  } catch (const ConfigError& e) {
    return issue("seq_len_buckets", e.what());
  }
  // (its several ranks' sums are staged through host memory: NCCL's inside the step's graph are
  // pretraining's trainer's alone)
  if (t.allreduce == distributed::AllReduce::Nccl)
    return RelationIssue{"train", "allreduce",
                         "[train] allreduce = \"nccl\" sums pretraining's gradients inside the step's CUDA Graph, and "
                         "fine-tuning on several ranks sums them over MPI or Gloo through host memory: set allreduce "
                         "= \"auto\""};
  return std::nullopt;
}

// The relations among the model's own keys (a network that can be built), with `origin`'s fix
// where the model is not the config's text.
std::optional<RelationIssue> model_issue(const ModelConfig& m, const ModelOrigin& origin) {
  const bool folder = !origin.source.empty();
  if (m.hidden_size % m.num_attention_heads != 0)
    return RelationIssue{"model", "num_attention_heads",
                         fmt::format("{}hidden_size = {} is not divisible by num_attention_heads = {}: {}",
                                     folder ? "" : "[model] ", m.hidden_size, m.num_attention_heads,
                                     folder ? origin.fix : "pick a head count that divides it (BERT uses hidden_size / 64)")};
  if (m.pad_token_id >= m.vocab_size)
    return RelationIssue{"model", "pad_token_id",
                         fmt::format("{}pad_token_id = {} is not below vocab_size = {}{}", folder ? "" : "[model] ",
                                     m.pad_token_id, m.vocab_size, folder ? ": " + origin.fix : "")};
  return std::nullopt;
}

// `origin`: where [model] came from when not the config's text (a Hugging Face folder's
// config.json, a checkpoint's record), named in the messages with its fix; empty for the config's
// own [model].
// 1-bit Adam's and LAMB's settings together: its warm-up set, with AdamW or LAMB, and the warm-up
// not without it.
std::optional<RelationIssue> onebit_issue(const Config& c) {
  const TrainConfig& t = c.train;
  const bool onebit = t.gradient_compression == distributed::Compression::OneBit;
  if (!onebit && t.onebit_warmup_steps > 0)
    return RelationIssue{"train", "onebit_warmup_steps",
                         fmt::format("[train] onebit_warmup_steps = {} is 1-bit Adam's (and LAMB's) warm-up, and "
                                     "gradient_compression is \"{}\": set gradient_compression = \"onebit\", or "
                                     "remove it",
                                     t.onebit_warmup_steps, ir::enum_name(t.gradient_compression))};
  if (!onebit) return std::nullopt;
  // (the optimizers whose update is Adam's direction: the momentum travels in its units)
  if (t.optimizer.kind != ir::OpKind::Adamw && t.optimizer.kind != ir::OpKind::Lamb)
    return RelationIssue{"train", "gradient_compression",
                         fmt::format("[train] gradient_compression = \"onebit\" is 1-bit Adam and 1-bit LAMB, and the "
                                     "optimizer is {}: set optimizer = \"adamw\" or \"lamb\", or another "
                                     "gradient_compression (\"powersgd\", \"fp16\")",
                                     ir::op_info(t.optimizer.kind).name)};
  // (fine-tuning's schedule follows from its epochs, and its exchange is not 1-bit Adam's)
  if (c.finetune_section)
    return RelationIssue{"train", "gradient_compression",
                         "[train] gradient_compression = \"onebit\" (1-bit Adam and LAMB) is built for pretraining, "
                         "and this config fine-tunes ([finetune]): use gradient_compression = \"none\", \"fp16\", "
                         "\"bf16\" or \"powersgd\""};
  if (c.compile.precision == passes::Precision::Fp16)
    return RelationIssue{"train", "gradient_compression",
                         "[train] gradient_compression = \"onebit\" with [compile] precision = \"fp16\" (loss scaling) "
                         "is not supported yet: its error feedback would mix gradients of different loss scales; use "
                         "precision = \"bf16\" (sm_80 and newer) or \"fp32\""};
  if (t.onebit_warmup_steps < 1)
    return RelationIssue{"train", "onebit_warmup_steps",
                         fmt::format("[train] gradient_compression = \"onebit\" needs onebit_warmup_steps: the first "
                                     "steps, plain AdamW with fp32 sums, before the variance freezes (the paper: 15-25% "
                                     "of the run): set onebit_warmup_steps = {}",
                                     std::max<int64_t>(1, t.steps / 5))};
  if (t.beta1 >= 1)
    return RelationIssue{"train", "beta1",
                         "[train] gradient_compression = \"onebit\" sends the momentum, and beta1 = 1 never lets a "
                         "gradient into it: set beta1 = 0.9"};
  return std::nullopt;
}

// ZeRO stage 1's shards are updated from the summed fp32 gradients on the host (the staged path).
std::optional<RelationIssue> zero_issue(const Config& c) {
  const TrainConfig& t = c.train;
  if (t.zero_stage == 0) return std::nullopt;
  if (t.zero_stage > 1)
    return RelationIssue{"train", "zero_stage",
                         fmt::format("[train] zero_stage = {}: ZeRO stages 2 and 3 (gradients and params sharded too) "
                                     "are not built: set zero_stage = 1 (the optimizer state sharded) or 0",
                                     t.zero_stage)};
  if (t.gradient_compression != distributed::Compression::None)
    return RelationIssue{"train", "zero_stage",
                         fmt::format("[train] zero_stage = 1 with gradient_compression = \"{}\" is not built: each "
                                     "rank's share of the gradients is summed in fp32; set gradient_compression = "
                                     "\"none\", or zero_stage = 0",
                                     ir::enum_name(t.gradient_compression))};
  if (t.allreduce == distributed::AllReduce::Nccl)
    return RelationIssue{"train", "zero_stage",
                         "[train] zero_stage = 1 sums each rank's share of the gradients over MPI or Gloo through "
                         "host memory, and allreduce = \"nccl\" asks for NCCL's sums on the GPU: set allreduce = "
                         "\"auto\", or zero_stage = 0"};
  if (c.compile.precision == passes::Precision::Fp16)
    return RelationIssue{"train", "zero_stage",
                         "[train] zero_stage = 1 with precision fp16 (loss scaling; what precision = \"auto\" takes on "
                         "sm_70 and sm_75) is not built: an overflow in one rank's shard would skip the update on that "
                         "rank alone; set [compile] precision = \"fp32\" (or \"bf16\" on sm_80 and newer), or "
                         "zero_stage = 0"};
  if (c.finetune_section)
    return RelationIssue{"train", "zero_stage",
                         "[train] zero_stage = 1 shards pretraining's optimizer step, and this config fine-tunes "
                         "([finetune]), whose ranks each keep the whole optimizer state: set zero_stage = 0"};
  return std::nullopt;
}

}  // namespace

std::string zero_stage_issue(const Config& config) {
  const std::optional<RelationIssue> issue = zero_issue(config);
  return issue ? issue->message : "";
}

namespace {

std::optional<RelationIssue> check_relations(const Config& c, const ModelOrigin& origin = {}) {
  const ModelConfig& m = c.model;
  const TrainConfig& t = c.train;
  const bool folder = !origin.source.empty();
  if (auto issue = model_issue(m, origin)) return issue;
  // (the sequences of one optimizer step: a step of 10^12 micro-batches never ended, deaf to
  // signals, which wait for a step's end, and a product past 2^64 wrapped into a loader's error)
  // (a batch of more alone is said as the batch's: lowering the accumulation, already 1, was advised)
  if (t.batch_size > kMostSequencesAStep)
    return RelationIssue{"train", "batch_size",
                         fmt::format("[train] batch_size = {} is more than 2^31 sequences a step (BERT's largest "
                                     "recipes take 65536): lower it, and reach a larger batch by "
                                     "gradient_accumulation_steps or more ranks",
                                     t.batch_size)};
  if (t.gradient_accumulation_steps > kMostSequencesAStep / t.batch_size)
    return RelationIssue{"train", "gradient_accumulation_steps",
                         fmt::format("[train] batch_size = {} x gradient_accumulation_steps = {} is more than 2^31 "
                                     "sequences a step (BERT's largest recipes take 65536): lower "
                                     "gradient_accumulation_steps to {} or fewer",
                                     t.batch_size, t.gradient_accumulation_steps,
                                     std::max<int64_t>(1, kMostSequencesAStep / t.batch_size))};
  // (each pass makes every document's examples anew and keeps them: a million passes of a small
  // text was hours of making examples, deaf to signals, and prepare-data blamed the documents)
  if (t.dupe_factor > 1000)
    return RelationIssue{"train", "dupe_factor",
                         fmt::format("[train] dupe_factor = {} passes over the text, each masked differently, and "
                                     "BERT uses 5 to 10: set 1000 or fewer (more text, not more passes, if the "
                                     "corpus is small)",
                                     t.dupe_factor)};
  if (c.compile.recompute == passes::RecomputePolicy::Auto && c.compile.memory_budget == 0)
    return RelationIssue{"compile", "recompute",
                         "[compile] recompute = \"auto\" needs memory_budget (bytes of activations to fit in)"};
  if (t.seq_len > m.max_position_embeddings)
    return RelationIssue{"train", "seq_len",
                         fmt::format("[train] seq_len = {} exceeds {} = {}{}", t.seq_len,
                                     folder ? "max_position_embeddings" : "[model] max_position_embeddings",
                                     m.max_position_embeddings,
                                     folder ? fmt::format(" of {}: lower [train] seq_len to {} or fewer", origin.source,
                                                          m.max_position_embeddings)
                                            : fmt::format(": lower [train] seq_len to {} or fewer, or raise [model] "
                                                          "max_position_embeddings (BERT's is 512; a model made "
                                                          "from scratch may have more)",
                                                          m.max_position_embeddings))};
  if (c.finetune_section)
    if (auto issue = check_finetune(c.finetune, t, m.max_position_embeddings, c.given.count("finetune.num_labels") > 0)) return issue;
  // (pretraining's examples are sentence pairs, segments 0 and 1, as next-sentence prediction
  // needs: one token type failed at step 1, naming bertc's own examples as the data to fix)
  if (!c.finetune_section && m.type_vocab_size < 2)
    return RelationIssue{"model", "type_vocab_size",
                         fmt::format("{}type_vocab_size = {}, and pretraining's examples are sentence pairs (token "
                                     "types 0 and 1, for next-sentence prediction): {}",
                                     folder ? "" : "[model] ", m.type_vocab_size,
                                     folder ? fmt::format("{}'s model cannot be pretrained: fine-tune it (bertc "
                                                          "finetune), or start from other weights",
                                                          origin.source)
                                            : "set 2, as BERT has")};
  // (fine-tuning's batches are its task's, bucketed by length: rows of pretraining examples are not theirs)
  if (c.finetune_section && t.packing == Packing::Pack)
    return RelationIssue{"train", "packing",
                         "[train] packing = \"pack\" places pretraining examples into rows, and this config fine-tunes "
                         "([finetune]), whose batches are bucketed by length ([finetune] seq_len_buckets): remove it"};
  // ([CLS] a [SEP] b [SEP]: an example takes 5 tokens at least)
  if (t.packing == Packing::Pack && t.packing_max_examples > t.seq_len / 5)
    return RelationIssue{"train", "packing_max_examples",
                         fmt::format("[train] packing_max_examples = {}, and an example takes 5 tokens at least: "
                                     "seq_len = {} holds {} at most; set {} or fewer (3 is NVIDIA's choice at 512)",
                                     t.packing_max_examples, t.seq_len, t.seq_len / 5, std::max<int64_t>(1, t.seq_len / 5))};
  if (const auto issue = onebit_issue(c)) return issue;
  if (const auto issue = zero_issue(c)) return issue;
  if (!c.finetune_section && t.max_predictions_per_seq > t.seq_len)  // (no masked predictions in fine-tuning)
    return RelationIssue{"train", "max_predictions_per_seq",
                         fmt::format("[train] max_predictions_per_seq = {} exceeds seq_len = {}",
                                     t.max_predictions_per_seq, t.seq_len)};
  return std::nullopt;
}

}  // namespace

std::vector<std::string> FinetuneConfig::label_names() const { return split_list(labels); }

std::vector<int64_t> FinetuneConfig::buckets(int64_t seq_len, int64_t max_positions) const {
  std::vector<int64_t> out;
  for (const std::string& item : split_list(seq_len_buckets)) {
    int64_t n = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), n);
    if (ec != std::errc() || end != item.data() + item.size() || n < 2)
      throw ConfigError(fmt::format("seq_len_buckets: '{}' is not a sequence length (an integer, 2 or more)", item));
    if (!out.empty() && n <= out.back())
      throw ConfigError(fmt::format("seq_len_buckets: {} after {}: list the lengths rising", n, out.back()));
    out.push_back(n);
  }
  // (max_positions, where given: raising seq_len past the model's positions is refused next)
  if (!out.empty() && max_positions > 0 && out.back() > max_positions)
    throw ConfigError(fmt::format("seq_len_buckets: {} exceeds max_position_embeddings = {}, the most positions the "
                                  "model reads: drop the bucket (the longest may be {})",
                                  out.back(), max_positions, std::min(seq_len, max_positions)));
  if (!out.empty() && out.back() > seq_len)
    throw ConfigError(fmt::format("seq_len_buckets: {} exceeds [train] seq_len = {}, the longest compiled length: "
                                  "raise seq_len{} or drop the bucket",
                                  out.back(), seq_len,
                                  max_positions > 0 ? fmt::format(" (up to max_position_embeddings = {})", max_positions)
                                                    : ""));
  if (out.empty() || out.back() != seq_len) out.push_back(seq_len);
  return out;
}

TaskMetric FinetuneConfig::chosen_metric() const {
  if (best_metric != TaskMetric::Auto) return best_metric;
  return task == FinetuneTask::Regression ? TaskMetric::Pearson : TaskMetric::Accuracy;
}

namespace {

// Why `name` cannot name the run's folder (checkpoints/NAME), or nullopt: it must be one path
// component of its own, neither empty nor "." nor "..", so that it never leaves its folder.
std::optional<std::string> name_problem(const std::string& name) {
  if (name.empty()) return "is empty";
  if (name == "." || name == "..") return fmt::format("is '{}', which is a folder itself, not a name in one", name);
  if (name.find_first_of("/\\") != std::string::npos) return "holds a '/' or '\\' (a path, not a name)";
  if (name.front() == '.' || name.front() == '-') return "starts with '.' or '-' (a hidden file, or an option)";
  if (name.front() == ' ' || name.back() == ' ') return "starts or ends with a space";
  if (name.size() > 200) return "is longer than 200 bytes";
  // Every character visible: an invisible, control or other space character makes a folder name
  // that looks like another (or like nothing) in a listing.
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(name.data());
  for (utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(name.size()); left > 0;) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(p, left, &cp);
    if (n <= 0) return "is not UTF-8";
    const utf8proc_category_t c = utf8proc_category(cp);
    if (c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF || c == UTF8PROC_CATEGORY_CO ||
        c == UTF8PROC_CATEGORY_CS || c == UTF8PROC_CATEGORY_CN || c == UTF8PROC_CATEGORY_ZL ||
        c == UTF8PROC_CATEGORY_ZP || (c == UTF8PROC_CATEGORY_ZS && cp != ' '))
      return fmt::format("holds U+{:04X}, an invisible, control or space character", cp);
    p += n, left -= n;
  }
  // One spelling of each name (NFC): "café" typed composed on one machine and decomposed on
  // another (macOS) look the same and are two folders; --resume would find no checkpoint.
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> nfc(
      utf8proc_NFC(reinterpret_cast<const utf8proc_uint8_t*>(name.c_str())), &std::free);
  if (nfc && name != reinterpret_cast<const char*>(nfc.get()))
    return fmt::format("is not in Unicode's composed form (NFC): an accent written as a character of its own, as some "
                       "systems write it, looks the same and names another folder; write name = \"{}\"",
                       reinterpret_cast<const char*>(nfc.get()));
  return std::nullopt;
}

// Refuses text that is not a TOML config at all, before TOML reads it: a compiled program or an
// executable (binary: a NUL byte, or ELF's magic) would get a TOML syntax error at its first byte.
void refuse_binary(std::string_view text, const std::string& source) {
  const std::string_view head = text.substr(0, 4096);
  if (head.find('\0') == std::string_view::npos && !head.starts_with("\x7f" "ELF")) return;
  const std::string kind = support::content_kind_of(head);
  // (the advice of info and train only where it is a compiled program they read)
  const bool program = head.starts_with("BERTCX") || head.starts_with("\x7f" "ELF");
  throw ConfigError(fmt::format("{}: not a TOML config but a binary file{}{}; this command reads a config", source,
                                kind.empty() ? "" : ", " + kind,
                                program ? fmt::format(": `bertc info {}` says what a compiled program holds (and the "
                                                      "config it was compiled from), `bertc train {}` trains one",
                                                      source, source)
                                        : ""));
}

}  // namespace

void validate_model(const ModelConfig& model, const ModelOrigin& origin) {
  if (const auto issue = model_issue(model, origin)) throw ConfigError(fmt::format("{}: {}", origin.source, issue->message));
}

void validate(const Config& c, const ModelOrigin& origin) {
  const auto issue = check_relations(c, origin);
  if (!issue) return;
  if (issue->section == "model" && !origin.source.empty())
    throw ConfigError(fmt::format("{}: {}", origin.source, issue->message));
  // Point at the key to change when the file sets it; the default is in force otherwise.
  const auto at = c.given_at.find(fmt::format("{}.{}", issue->section, issue->key));
  if (at == c.given_at.end())
    throw ConfigError(fmt::format("{}: {} ([{}] {} is not set, so its default applies)", c.source, issue->message,
                                  issue->section, issue->key));
  throw ConfigError(fmt::format("{}:{}: {}", c.source, at->second, issue->message));
}

Config parse_config(std::string_view toml_text, const std::string& source, std::span<const ExtraKey> extra_keys,
                    bool check) {
  Config config;
  config.source = source;
  config.name = std::filesystem::path(source).stem().string();
  toml::table root;
  try {
    root = toml::parse(toml_text, source);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    throw ConfigError(fmt::format("{}:{}:{}: TOML syntax error: {}", source, b.line, b.column, e.description()));
  }
  Loader(config, extra_keys).load(root);
  if (const auto problem = name_problem(config.name)) {
    const toml::node* node = root["name"].node();
    throw ConfigError(node ? fmt::format("{}:{}:{}: name = \"{}\" {}: it names the run's folder (checkpoints/NAME): "
                                         "give a name of visible characters (letters, digits, '-' and '_' suit every file system)",
                                         source, node->source().begin.line, node->source().begin.column, config.name,
                                         *problem)
                           : fmt::format("{}: the run's name, from the file's name, {}: set name = \"...\" in the "
                                         "config (a name of visible characters: letters, digits, '-' and '_' suit every file system)",
                                         source, *problem));
  }
  // A fine-tuning run's length and warmup follow from its epochs and the examples.
  for (const char* key : {"steps", "warmup_steps"})
    if (const toml::node* node = root["train"][key].node(); node && config.finetune_section) {
      const auto& b = node->source().begin;
      throw ConfigError(fmt::format("{}:{}:{}: [train] {} is not used by a fine-tuning config: its steps follow from "
                                    "[finetune] epochs and the examples, its warmup from [finetune] warmup_ratio; "
                                    "remove the key",
                                    source, b.line, b.column, key));
    }
  // num_labels follows from the task where the config leaves it out: one number for a regression,
  // a class for each name of labels (its default of 2 was refused for both, with a fix to write).
  if (config.finetune_section && !config.given.count("finetune.num_labels")) {
    if (config.finetune.task == FinetuneTask::Regression) config.finetune.num_labels = 1;
    else if (const auto names = config.finetune.label_names(); names.size() >= 2)
      config.finetune.num_labels = static_cast<int64_t>(names.size());
  }
  if (check) validate(config);
  return config;
}

int64_t TrainConfig::row_predictions() const {
  if (examples_per_row() == 0) return max_predictions_per_seq;
  // BERT's masking (data/pretraining_data.cpp mask_tokens) predicts max(1, round(tokens x p)) of an
  // example, at most max_predictions_per_seq: K examples sharing seq_len tokens get at most
  // floor(seq_len x p) + K together, which is far below K x max_predictions_per_seq, and so is the
  // MLM head's work (its decoder is [B x predictions, vocab]). A row of data masked otherwise is
  // placed by the same capacity (pack_rows): nothing past it is ever laid out.
  const auto shared = static_cast<int64_t>(std::floor(static_cast<double>(seq_len) * masked_lm_prob)) + examples_per_row();
  return std::min(examples_per_row() * max_predictions_per_seq, std::max(max_predictions_per_seq, shared));
}

frontend::ModelSettings Config::model_settings() const {
  frontend::ModelSettings s{.name = name, .model = model, .extra = extra,
                            .batch = {train.batch_size, train.seq_len, train.row_predictions(), train.examples_per_row()},
                            .dropout = compile.dropout};
  if (finetune_section) s.head = frontend::TaskHead{finetune.task, finetune.num_labels};
  return s;
}

std::filesystem::path Config::resolve(const std::string& path) const {
  const std::filesystem::path p(path);
  if (p.is_absolute() || source.empty() || from_stream) return p;
  return std::filesystem::path(source).parent_path() / p;
}


Config load_config(const std::filesystem::path& path, std::span<const ExtraKey> extra_keys, bool model_required) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw ConfigError(fmt::format("{}: cannot open config file (does it exist?)", path.string()));
  // (16 MiB: a config is a few KB; /dev/zero given as one was read without end)
  std::string text;
  try {
    text = support::read_bounded(path, uint64_t{16} << 20, "a config file (TOML)");
  } catch (const std::runtime_error& e) {
    throw ConfigError(e.what());
  }
  refuse_binary(text, path.string());
  Config config = parse_config(text, path.string(), extra_keys, model_required);
  // (/dev/stdin and /proc/self/fd/N name a descriptor, not a folder: a file redirected into one
  // is read as a pipe is, its relative paths from the working directory; they were from /dev)
  const std::string folder = std::filesystem::absolute(path, ec).lexically_normal().parent_path().string();
  config.from_stream = !std::filesystem::is_regular_file(path, ec) || folder == "/dev" ||
                       folder.starts_with("/dev/") || folder.starts_with("/proc/");
  // Without one, every model key would take its default: a BERT-base nobody asked for.
  if (model_required && !config.model_section)
    throw ConfigError(fmt::format("{}: no [model] section: write the model's sizes under [model] (see "
                                  "examples/bert-tiny.toml), or an empty [model] for BERT-base's defaults",
                                  path.string()));
  return config;
}

Config load_data_config(const std::filesystem::path& path, std::span<const ExtraKey> extra_keys) {
  Config config = load_config(path, extra_keys, /*model_required=*/false);
  validate(config);  // (without [model]: against BERT-base's, as load_data_config's comment says)
  return config;
}

}  // namespace bertc::run_config
