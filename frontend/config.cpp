// TOML config loading with toml++: every key known, typed and range-checked, errors located.
#include "frontend/config.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <toml++/toml.h>

namespace bertc::frontend {
namespace {

enum class Range { Any, Positive, NonNegative, Probability, PositiveFloat, NonNegativeFloat };

struct Field {
  std::string_view section;
  std::string_view key;
  std::variant<int64_t*, double*, bool*, std::string*> target;
  Range range;
  std::vector<std::string_view> choices = {};  // allowed strings, when limited
};

std::vector<Field> fields_of(Config& c) {
  ModelConfig& m = c.model;
  TrainConfig& t = c.train;
  return {
      {"model", "vocab_size", &m.vocab_size, Range::Positive},
      {"model", "hidden_size", &m.hidden_size, Range::Positive},
      {"model", "num_hidden_layers", &m.num_hidden_layers, Range::Positive},
      {"model", "num_attention_heads", &m.num_attention_heads, Range::Positive},
      {"model", "intermediate_size", &m.intermediate_size, Range::Positive},
      {"model", "max_position_embeddings", &m.max_position_embeddings, Range::Positive},
      {"model", "type_vocab_size", &m.type_vocab_size, Range::Positive},
      {"model", "pad_token_id", &m.pad_token_id, Range::NonNegative},
      {"model", "hidden_dropout_prob", &m.hidden_dropout_prob, Range::Probability},
      {"model", "attention_probs_dropout_prob", &m.attention_probs_dropout_prob, Range::Probability},
      {"model", "layer_norm_eps", &m.layer_norm_eps, Range::PositiveFloat},
      {"model", "initializer_range", &m.initializer_range, Range::PositiveFloat},
      {"train", "batch_size", &t.batch_size, Range::Positive},
      {"train", "seq_len", &t.seq_len, Range::Positive},
      {"train", "max_predictions_per_seq", &t.max_predictions_per_seq, Range::Positive},
      {"train", "gradient_accumulation_steps", &t.gradient_accumulation_steps, Range::Positive},
      {"train", "seed", &t.seed, Range::NonNegative},
      {"train", "steps", &t.steps, Range::Positive},
      {"train", "optimizer", &t.optimizer, Range::Any, {"adamw", "lamb"}},
      {"train", "learning_rate", &t.learning_rate, Range::PositiveFloat},
      {"train", "warmup_steps", &t.warmup_steps, Range::NonNegative},
      {"train", "lr_decay", &t.lr_decay, Range::Any, {"linear", "polynomial", "constant"}},
      {"train", "lr_decay_power", &t.lr_decay_power, Range::PositiveFloat},
      {"train", "end_learning_rate", &t.end_learning_rate, Range::NonNegativeFloat},
      {"train", "beta1", &t.beta1, Range::Probability},
      {"train", "beta2", &t.beta2, Range::Probability},
      {"train", "epsilon", &t.epsilon, Range::PositiveFloat},
      {"train", "weight_decay", &t.weight_decay, Range::NonNegativeFloat},
      {"train", "max_grad_norm", &t.max_grad_norm, Range::NonNegativeFloat},
      {"train", "checkpoint_every", &t.checkpoint_every, Range::NonNegative},
      {"train", "keep_checkpoints", &t.keep_checkpoints, Range::Positive},
      {"train", "log_every", &t.log_every, Range::Positive},
      {"train", "data", &t.data, Range::Any},
      {"train", "vocab", &t.vocab, Range::Any},
      {"train", "do_lower_case", &t.do_lower_case, Range::Any},
      {"train", "masked_lm_prob", &t.masked_lm_prob, Range::Probability},
      {"train", "short_seq_prob", &t.short_seq_prob, Range::Probability},
      {"train", "dupe_factor", &t.dupe_factor, Range::Positive},
      {"compile", "dropout", &c.compile.dropout, Range::Any},
      {"compile", "arch", &c.compile.arch, Range::Any},
      {"compile", "precision", &c.compile.precision, Range::Any, {"auto", "fp32", "fp16", "bf16", "fp32-fp16storage"}},
      {"compile", "recompute", &c.compile.recompute, Range::Any, {"none", "selective", "full", "auto"}},
      {"compile", "memory_budget", &c.compile.memory_budget, Range::NonNegative},
      {"compile", "fusion", &c.compile.fusion, Range::Any},
      {"compile", "fused_attention", &c.compile.fused_attention, Range::Any},
      {"compile", "matmul", &c.compile.matmul, Range::Any, {"auto", "generated", "library"}},
      {"compile", "print_ir_after_all", &c.compile.print_ir_after_all, Range::Any},
      {"compile", "dump_ir", &c.compile.dump_ir, Range::Any},
  };
}

constexpr std::string_view kSections[] = {"model", "train", "compile"};

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
    fields_ = fields_of(c_);
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
        for (const auto& [sub, value] : *table) set_key(k, sub, value);
      } else {
        fail(key.source(), fmt::format("unknown top-level key '{}'{} (expected name, [model], [train] or [compile])",
                                       k, suggestion(k, {"name", "model", "train", "compile"})));
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
    out = *node.value<std::string>();
  }

  void set_key(const std::string& section, const toml::key& toml_key, const toml::node& node) {
    const std::string key(toml_key.str());
    const std::string where = fmt::format("[{}] {}", section, key);
    for (const Field& f : fields_)
      if (f.section == section && f.key == key) return assign(f, where, node);
    if (section == "model")
      for (const ExtraKey& k : extra_keys_)
        if (k.name == key) return assign_extra(k, where, node);
    std::vector<std::string> known;
    for (const Field& f : fields_)
      if (f.section == section) known.emplace_back(f.key);
    if (section == "model")
      for (const ExtraKey& k : extra_keys_) known.push_back(k.name);
    fail(toml_key.source(), fmt::format("unknown key '{}' in [{}]{}", key, section, suggestion(key, known)));
  }

  void assign(const Field& f, const std::string& where, const toml::node& node) const {
    if (auto* i = std::get_if<int64_t*>(&f.target)) {
      if (!node.is_integer()) fail(node, fmt::format("{} must be an integer, found {}", where, describe(node)));
      **i = *node.value<int64_t>();
      if (f.range == Range::Positive && **i <= 0) fail(node, fmt::format("{} must be positive, found {}", where, **i));
      if (f.range == Range::NonNegative && **i < 0) fail(node, fmt::format("{} must be >= 0, found {}", where, **i));
    } else if (auto* d = std::get_if<double*>(&f.target)) {
      // An integer is accepted where a number is expected (hidden_dropout_prob = 0).
      if (!node.is_number()) fail(node, fmt::format("{} must be a number, found {}", where, describe(node)));
      **d = *node.value<double>();
      if (f.range == Range::Probability && !(**d >= 0 && **d < 1))
        fail(node, fmt::format("{} must be a probability in [0, 1), found {}", where, **d));
      if (f.range == Range::PositiveFloat && !(**d > 0))
        fail(node, fmt::format("{} must be positive, found {}", where, **d));
      if (f.range == Range::NonNegativeFloat && !(**d >= 0))
        fail(node, fmt::format("{} must be >= 0, found {}", where, **d));
    } else if (auto* b = std::get_if<bool*>(&f.target)) {
      if (!node.is_boolean()) fail(node, fmt::format("{} must be true or false, found {}", where, describe(node)));
      **b = *node.value<bool>();
    } else {
      std::string& out = *std::get<std::string*>(f.target);
      set_string(node, where, out);
      if (!f.choices.empty() && std::find(f.choices.begin(), f.choices.end(), out) == f.choices.end())
        fail(node, fmt::format("{} must be one of {}, found \"{}\"", where, fmt::join(f.choices, ", "), out));
    }
  }

  void assign_extra(const ExtraKey& k, const std::string& where, const toml::node& node) {
    ConfigValue& out = c_.extra[k.name];
    if (std::holds_alternative<bool>(k.default_value) && node.is_boolean()) out = *node.value<bool>();
    else if (std::holds_alternative<int64_t>(k.default_value) && node.is_integer()) out = *node.value<int64_t>();
    else if (std::holds_alternative<double>(k.default_value) && node.is_number()) out = *node.value<double>();
    else if (std::holds_alternative<std::string>(k.default_value) && node.is_string()) out = *node.value<std::string>();
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
  std::vector<Field> fields_;
};

}  // namespace

namespace {

// A problem between keys, attributed to the key a user should change.
struct RelationIssue {
  std::string section, key, message;
};

std::optional<RelationIssue> check_relations(const Config& c) {
  const ModelConfig& m = c.model;
  const TrainConfig& t = c.train;
  if (m.hidden_size % m.num_attention_heads != 0)
    return RelationIssue{"model", "num_attention_heads",
                         fmt::format("[model] hidden_size = {} is not divisible by num_attention_heads = {}: pick a "
                                     "head count that divides it (BERT uses hidden_size / 64)",
                                     m.hidden_size, m.num_attention_heads)};
  if (m.pad_token_id >= m.vocab_size)
    return RelationIssue{"model", "pad_token_id",
                         fmt::format("[model] pad_token_id = {} is not below vocab_size = {}", m.pad_token_id,
                                     m.vocab_size)};
  if (c.compile.recompute == "auto" && c.compile.memory_budget == 0)
    return RelationIssue{"compile", "recompute",
                         "[compile] recompute = \"auto\" needs memory_budget (bytes of activations to fit in)"};
  if (t.seq_len > m.max_position_embeddings)
    return RelationIssue{"train", "seq_len",
                         fmt::format("[train] seq_len = {} exceeds [model] max_position_embeddings = {}", t.seq_len,
                                     m.max_position_embeddings)};
  if (t.max_predictions_per_seq > t.seq_len)
    return RelationIssue{"train", "max_predictions_per_seq",
                         fmt::format("[train] max_predictions_per_seq = {} exceeds seq_len = {}",
                                     t.max_predictions_per_seq, t.seq_len)};
  return std::nullopt;
}

}  // namespace

void validate(const Config& c) {
  if (auto issue = check_relations(c)) throw ConfigError(fmt::format("{}: {}", c.source, issue->message));
}

Config parse_config(std::string_view toml_text, const std::string& source, std::span<const ExtraKey> extra_keys) {
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
  if (auto issue = check_relations(config)) {
    // Point at the key to change when the file sets it; the default is in force otherwise.
    const toml::node* node = root[issue->section][issue->key].node();
    if (!node)
      throw ConfigError(fmt::format("{}: {} ([{}] {} is not set, so its default applies)", source, issue->message,
                                    issue->section, issue->key));
    const auto& b = node->source().begin;
    throw ConfigError(fmt::format("{}:{}:{}: {}", source, b.line, b.column, issue->message));
  }
  return config;
}

std::filesystem::path Config::resolve(const std::string& path) const {
  const std::filesystem::path p(path);
  if (p.is_absolute() || source.empty()) return p;
  return std::filesystem::path(source).parent_path() / p;
}

Config load_config(const std::filesystem::path& path, std::span<const ExtraKey> extra_keys) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("{}: cannot open config file (does it exist?)", path.string()));
  std::ostringstream text;
  text << in.rdbuf();
  return parse_config(text.str(), path.string(), extra_keys);
}

}  // namespace bertc::frontend
