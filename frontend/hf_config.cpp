// config.json of Hugging Face BERT folders, in and out (see hf_config.h).
#include "frontend/hf_config.h"

#include <fstream>

#include <fmt/format.h>

namespace bertc::frontend {
namespace {

using support::OptionValue;
using support::ValueKind;

// The JSON value as an option value of `kind` (an integer where a float is expected too).
std::optional<OptionValue> option_value(const nlohmann::json& v, ValueKind kind) {
  if (kind == ValueKind::Int && v.is_number_integer()) return OptionValue(v.get<int64_t>());
  if (kind == ValueKind::Float && v.is_number()) return OptionValue(v.get<double>());
  if (kind == ValueKind::Bool && v.is_boolean()) return OptionValue(v.get<bool>());
  if (kind == ValueKind::String && v.is_string()) return OptionValue(v.get<std::string>());
  return std::nullopt;
}

// A string key of config.json that must have one value (or be absent: its default).
void require(const nlohmann::json& j, const std::string& key, const std::string& wanted, const std::string& source,
             const std::string& why) {
  const auto it = j.find(key);
  if (it == j.end() || (it->is_string() && it->get<std::string>() == wanted)) return;
  throw ConfigError(fmt::format("{}: {} is {}; bertc runs {} = \"{}\" only ({})", source, key, it->dump(), key, wanted,
                                why));
}

void refuse_true(const nlohmann::json& j, const std::string& key, const std::string& source, const std::string& why) {
  const auto it = j.find(key);
  if (it != j.end() && it->is_boolean() && it->get<bool>())
    throw ConfigError(fmt::format("{}: {} is true; bertc runs BERT encoders only ({})", source, key, why));
}

}  // namespace

bool is_hf_folder(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec) && std::filesystem::exists(path / "config.json", ec);
}

nlohmann::json model_json(const ModelConfig& model) {
  Config c;
  c.model = model;
  nlohmann::json j = nlohmann::json::object();
  for (const auto& spec : config_keys()) {
    if (spec.section != "model") continue;
    std::visit([&](const auto& v) { j[std::string(spec.key)] = v; }, spec.get(c));
  }
  return j;
}

ModelConfig model_from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) throw ConfigError(fmt::format("{}: a model config must be a JSON object", source));
  Config c;
  for (const auto& spec : config_keys()) {
    if (spec.section != "model") continue;
    const auto it = j.find(std::string(spec.key));
    if (it == j.end()) continue;  // (Hugging Face's BertConfig defaults are bertc's: BERT-base)
    const std::optional<OptionValue> value = option_value(*it, spec.kind);
    if (!value)
      throw ConfigError(fmt::format("{}: {} must be {}, found {}", source, spec.key, support::kind_description(spec.kind),
                                    it->dump()));
    if (const auto problem = spec.set(c, *value)) throw ConfigError(fmt::format("{}: {} {}", source, spec.key, *problem));
  }
  return c.model;
}

void use_hf_model(Config& config, const std::filesystem::path& folder) {
  const std::filesystem::path file = folder / "config.json";
  const std::string source = file.string();
  std::ifstream in(file);
  if (!in) throw ConfigError(fmt::format("{}: cannot open it (a Hugging Face model folder has one)", source));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(fmt::format("{}: not JSON: {}", source, e.what()));
  }
  if (!j.is_object()) throw ConfigError(fmt::format("{}: a config.json is a JSON object", source));
  require(j, "model_type", "bert", source, "a BERT folder; other model types have other layers");
  require(j, "hidden_act", "gelu", source, "the exact GELU of BERT; gelu_new and tanh approximations differ");
  require(j, "position_embedding_type", "absolute", source, "relative position embeddings are not implemented");
  refuse_true(j, "is_decoder", source, "no causal masks");
  refuse_true(j, "add_cross_attention", source, "no cross-attention");
  const ModelConfig from_folder = model_from_json(j, source);
  Config folder_config;
  folder_config.model = from_folder;
  // Keys the config's text sets must say what the folder says.
  for (const auto& spec : config_keys()) {
    if (spec.section != "model" || !config.given.count(fmt::format("model.{}", spec.key))) continue;
    const OptionValue mine = spec.get(config), theirs = spec.get(folder_config);
    if (mine != theirs)
      throw ConfigError(fmt::format("{}: [model] {} = {}, and {} says {}: remove the key from [model] (the folder's "
                                    "config.json gives the model) or make them agree",
                                    config.source, spec.key, support::value_text(mine), source,
                                    support::value_text(theirs)));
  }
  config.model = from_folder;
  config.model_section = true;
  validate(config);
}

void take_model_from(Config& config, const std::filesystem::path& init) {
  if (!init.empty() && is_hf_folder(init)) use_hf_model(config, init);
  else require_model_section(config);
}

nlohmann::json hf_config_json(const ModelConfig& model, HfHead head, int64_t num_labels, bool regression,
                              const std::vector<std::string>& labels) {
  nlohmann::json j = model_json(model);
  j["model_type"] = "bert";
  j["hidden_act"] = "gelu";
  j["position_embedding_type"] = "absolute";
  j["torch_dtype"] = "float32";
  const char* architecture = head == HfHead::Pretraining             ? "BertForPreTraining"
                             : head == HfHead::Base                   ? "BertModel"
                             : head == HfHead::SequenceClassification ? "BertForSequenceClassification"
                                                                      : "BertForTokenClassification";
  j["architectures"] = {architecture};
  if (head == HfHead::SequenceClassification || head == HfHead::TokenClassification) {
    nlohmann::json id2label = nlohmann::json::object(), label2id = nlohmann::json::object();
    for (int64_t i = 0; i < num_labels; ++i) {
      const std::string name =
          static_cast<size_t>(i) < labels.size() ? labels[static_cast<size_t>(i)] : fmt::format("LABEL_{}", i);
      id2label[std::to_string(i)] = name;
      label2id[name] = i;
    }
    j["id2label"] = id2label;
    j["label2id"] = label2id;
    if (head == HfHead::SequenceClassification)
      j["problem_type"] = regression ? "regression" : "single_label_classification";
  }
  return j;
}

}  // namespace bertc::frontend
