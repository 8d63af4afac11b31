// config.json of Hugging Face BERT folders, in and out (see hf_config.h).
#include "run_config/hf_config.h"
#include "support/file_errors.h"
#include "support/options_json.h"
#include "support/safetensors.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>

namespace bertc::run_config {
namespace {

using support::OptionValue;
using support::ValueKind;

// A string key of config.json that must have one value (or be absent: its default).
void require(const nlohmann::json& j, const std::string& key, const std::string& wanted, const std::string& source,
             const std::string& why) {
  const auto it = j.find(key);
  if (it == j.end() || (it->is_string() && it->get<std::string>() == wanted)) return;
  throw ConfigError(fmt::format("{}: {} is {}; bertc runs {} = \"{}\" only ({})", source, key, it->dump(), key, wanted,
                                why));
}

// A yes-or-no key of config.json; nullopt where absent or null. Another kind is refused:
// transformers tests it for truth (1 true, 0 false, "false" true), and bertc read only true and
// false (is_decoder 1 ran a decoder as an encoder; tie_word_embeddings 0 dropped an untied decoder).
std::optional<bool> config_flag(const nlohmann::json& j, const std::string& key, const std::string& source) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean())
    throw ConfigError(fmt::format("{}: {} is {}, not true or false: write the one the model was made with", source, key,
                                  it->dump()));
  return it->get<bool>();
}

void refuse_true(const nlohmann::json& j, const std::string& key, const std::string& source, const std::string& why) {
  if (config_flag(j, key, source).value_or(false))
    throw ConfigError(fmt::format("{}: {} is true; bertc runs BERT encoders only ({})", source, key, why));
}

// The folder's tokenizer: vocab.txt (the embeddings' rows are its tokens) and do_lower_case from
// tokenizer_config.json. A folder without vocab.txt is refused: which vocabulary the embeddings are
// of must not be a guess (and a config naming another is refused when the weights are read).
void use_hf_tokenizer(Config& config, const std::filesystem::path& folder) {
  std::error_code ec;
  const std::filesystem::path vocab = folder / "vocab.txt";
  if (const std::string kind = support::non_regular_kind(vocab); !kind.empty())
    throw ConfigError(fmt::format("{}: {}, not a file: the folder's vocabulary is read from it; put the "
                                  "vocab.txt back as a file",
                                  vocab.string(), kind));
  if (!std::filesystem::is_regular_file(vocab, ec))
    throw ConfigError(fmt::format(
        "{}: the folder has no vocab.txt, and its embeddings are rows of the vocabulary the model was trained with, "
        "which bertc does not guess: put that vocabulary in the folder as vocab.txt{}",
        folder.string(),
        std::filesystem::exists(folder / "tokenizer.json", ec)
            ? fmt::format(" (from its tokenizer.json: python3 -c \"from transformers import AutoTokenizer; "
                          "AutoTokenizer.from_pretrained('{}').save_vocabulary('{}')\")",
                          folder.string(), folder.string())
            : ""));
  // A vocabulary the config names is kept, and checked against the folder's by its tokens when the
  // weights are read (run_folder/resume.h check_init_vocab): the same tokens in other bytes (CRLF line
  // ends) are the same vocabulary.
  if (!config.given.count("train.vocab")) config.train.vocab = std::filesystem::absolute(vocab, ec).string();
  // (read, and its settings checked, whether or not the config sets do_lower_case)
  const HfTokenizerSettings settings = hf_tokenizer_settings(folder);
  if (config.given.count("train.do_lower_case")) return;
  if (settings.do_lower_case) config.train.do_lower_case = *settings.do_lower_case;
}

// config.model from `recorded` (a folder's config.json, a checkpoint's record: `source`, `what`
// in the fix): keys the config's text sets must say what it says, but for those that do not shape
// the network (dropout, the init of fresh weights), which the config's text overrides as
// from_pretrained's keyword arguments do; the others are the record's (a [model] of a dropout key
// alone took BERT-base's sizes).
void merge_recorded_model(Config& config, const ModelConfig& recorded, const std::string& source,
                          const std::string& what) {
  Config recorded_config;
  recorded_config.model = recorded;
  ModelConfig merged = recorded;
  for (const auto& spec : config_keys()) {
    if (spec.section != "model" || !config.given.count(fmt::format("model.{}", spec.key))) continue;
    const OptionValue mine = spec.get(config), theirs = spec.get(recorded_config);
    if (overrides_a_record(spec.key)) {
      Config m;
      m.model = merged;
      (void)spec.set(m, mine);
      merged = m.model;
    } else if (mine != theirs) {
      throw ConfigError(fmt::format("{}: [model] {} = {}, and {} says {}: remove the key from [model] ({} gives the "
                                    "model) or make them agree",
                                    config.source, spec.key, support::value_text(mine), source,
                                    support::value_text(theirs), what));
    }
  }
  config.model = merged;
  config.model_section = true;
  config.model_from = source;
}

}  // namespace

bool overrides_a_record(std::string_view key) {
  return key == "hidden_dropout_prob" || key == "attention_probs_dropout_prob" || key == "initializer_range";
}

bool is_hf_folder(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec) && std::filesystem::exists(path / "config.json", ec);
}

HfHeadRecord hf_head_record(const std::filesystem::path& weights) {
  const std::filesystem::path file = (is_hf_folder(weights) ? weights : weights.parent_path()) / "config.json";
  HfHeadRecord r;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) return r;
  std::ifstream in(file);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object())
    throw ConfigError(fmt::format("{}: not a JSON object: it says what the head of the weights beside it computes, "
                                  "and what each class number means; restore it (bertc export writes it)",
                                  file.string()));
  if (j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
      j["architectures"][0].is_string())
    r.architecture = j["architectures"][0].get<std::string>();
  if (j.contains("problem_type") && j["problem_type"].is_string()) r.problem_type = j["problem_type"].get<std::string>();
  if (j.contains("num_labels"))
    if (const auto n = support::value_from_json(ValueKind::Int, j["num_labels"])) r.classes = std::get<int64_t>(*n);
  if (!j.contains("id2label") || j["id2label"].is_null()) return r;
  if (!j["id2label"].is_object())
    throw ConfigError(fmt::format("{}: id2label is {}, not an object of class numbers and names ({{\"0\": \"NAME\", "
                                  "...}}, as transformers writes it), so what a class number means is not known: write "
                                  "it so",
                                  file.string(), j["id2label"].type_name()));
  bool named = false;
  for (size_t i = 0; i < j["id2label"].size(); ++i) {
    const std::string key = std::to_string(i);
    if (!j["id2label"].contains(key) || !j["id2label"][key].is_string())
      throw ConfigError(fmt::format("{}: id2label's keys are not the class numbers 0 to {} (no name of class {}), so "
                                    "what a class number means is not known: give each class its name",
                                    file.string(), j["id2label"].size() - 1, i));
    const std::string name = j["id2label"][key].get<std::string>();
    if (std::find(r.labels.begin(), r.labels.end(), name) != r.labels.end())
      throw ConfigError(fmt::format("{}: id2label names two classes \"{}\", so a prediction of it is not one class: "
                                    "give each class its own name",
                                    file.string(), name));
    r.labels.push_back(name);
    named = named || r.labels.back() != fmt::format("LABEL_{}", i);  // (transformers' default names)
  }
  r.classes = static_cast<int64_t>(r.labels.size());
  if (!named) r.labels.clear();
  return r;
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
    const std::optional<OptionValue> value = support::value_from_json(spec.kind, *it);
    if (!value)
      throw ConfigError(fmt::format("{}: {} must be {}, found {}", source, spec.key, support::kind_description(spec.kind),
                                    it->dump()));
    if (const auto problem = spec.set(c, *value)) throw ConfigError(fmt::format("{}: {} {}", source, spec.key, *problem));
  }
  return c.model;
}

namespace {

// What to do with a checkpoint whose model record is not as bertc writes it (the record alone
// cannot say which model the weights are of).
constexpr const char* kRecordFix = "the record was edited or damaged: use another copy, or another checkpoint of the "
                                   "run";

// `text` as JSON, refusing an object that names a key twice (nlohmann, as Python's json, keeps
// the last; bertc writes each once, so a second is an edit that one reader or another would miss).
nlohmann::json parse_without_repeats(const std::string& text, const std::string& source) {
  std::vector<std::set<std::string>> open_objects;
  std::string repeated;
  const nlohmann::json::parser_callback_t note = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start) open_objects.emplace_back();
    if (event == Event::object_end) open_objects.pop_back();
    if (event == Event::key && !open_objects.back().insert(parsed.get<std::string>()).second && repeated.empty())
      repeated = parsed.get<std::string>();
    return true;
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text, note);
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(fmt::format("{}: not JSON ({}): {}", source, e.what(), kRecordFix));
  }
  if (!repeated.empty())
    throw ConfigError(fmt::format("{}: it names {} twice, and bertc writes each key once: {}", source, repeated,
                                  kRecordFix));
  return j;
}

}  // namespace

std::optional<ModelConfig> model_of_record(const std::map<std::string, std::string>& meta, const std::string& source) {
  const auto recorded = meta.find("model_config");
  if (recorded == meta.end()) return std::nullopt;
  const std::string where = fmt::format("{} (its model record)", source);
  const nlohmann::json j = parse_without_repeats(recorded->second, where);
  if (!j.is_object()) throw ConfigError(fmt::format("{}: not a JSON object: {}", where, kRecordFix));
  std::set<std::string> known;
  for (const auto& spec : config_keys())
    if (spec.section == "model") {
      known.insert(std::string(spec.key));
      // (a missing key took BERT-base's value: config.json and the weights then disagreed)
      if (!j.contains(std::string(spec.key)))
        throw ConfigError(fmt::format("{}: it lacks {}, and bertc records every [model] key: {}", where, spec.key,
                                      kRecordFix));
    }
  for (const auto& [key, value] : j.items())
    if (!known.count(key))
      throw ConfigError(fmt::format("{}: it holds {} = {}, which is no [model] key bertc records (it would be dropped "
                                    "unread): {}",
                                    where, key, value.dump(), kRecordFix));
  const ModelConfig model = model_from_json(j, where);
  validate_model(model, {where, kRecordFix});
  const auto settings = meta.find("config_settings");
  if (settings == meta.end()) return model;
  Config c;
  c.model = model;
  const std::map<std::string, std::string> then = settings_of_text(settings->second);
  for (const auto& spec : config_keys()) {
    if (spec.section != "model") continue;
    const auto it = then.find(fmt::format("[model] {}", spec.key));
    if (it != then.end() && it->second != support::value_text(spec.get(c)))
      throw ConfigError(fmt::format("{}: it says {} = {}, and the run's settings in the same file say {}: {}", where,
                                    spec.key, support::value_text(spec.get(c)), it->second, kRecordFix));
  }
  return model;
}

void use_hf_model(Config& config, const std::filesystem::path& folder) {
  const std::filesystem::path file = folder / "config.json";
  const std::string source = file.string();
  if (const std::string kind = support::non_regular_kind(file); !kind.empty())
    throw ConfigError(fmt::format("{}: {}, not a file (opening a pipe would wait for ever): put the folder's "
                                  "config.json back as a file",
                                  source, kind));
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
  // (an untied MLM decoder matters to pretraining alone: fine-tuning and a task's evaluation leave
  // the MLM head out, and a task model's folder holds none)
  if (!config_flag(j, "tie_word_embeddings", source).value_or(true) && !config.finetune_section)
    throw ConfigError(fmt::format("{}: tie_word_embeddings is false; bertc's MLM decoder is the word embeddings "
                                  "(BERT's tie), so an untied decoder's weights would be lost in pretraining: "
                                  "fine-tune from the folder instead (a [finetune] config leaves the MLM head out), "
                                  "or, if its decoder's weights equal its embeddings, set tie_word_embeddings to true",
                                  source));
  if (const auto dropout = j.find("classifier_dropout"); dropout != j.end() && !dropout->is_null())
    throw ConfigError(fmt::format("{}: classifier_dropout is {}; bertc's task heads use hidden_dropout_prob before "
                                  "the classifier (Hugging Face's default, null): remove the key or set it to null",
                                  source, dropout->dump()));
  merge_recorded_model(config, model_from_json(j, source), source, "the folder's config.json");
  use_hf_tokenizer(config, folder);
  validate(config, {(folder / "config.json").string(), "correct the folder's config.json, or start from another folder"});
}

namespace {

// Whether `file` is a safetensors file that records its model (a bertc checkpoint's
// "model_config"); false for one that does not read (its reader then says what it is).
bool records_model(const std::filesystem::path& file) {
  try {
    return support::read_safetensors_metadata(file).count("model_config") > 0;
  } catch (const std::exception&) {
    return false;
  }
}

// The model a bertc checkpoint records ("model_config", as export writes config.json from it),
// merged with the config's [model] keys as a folder's config.json is: the checkpoint's own sizes,
// where a config without [model] was refused and a [model] of some keys took BERT-base's for the
// rest (every tensor then had another shape).
void use_recorded_model(Config& config, const std::filesystem::path& checkpoint, const std::string& model_program) {
  std::map<std::string, std::string> meta;
  try {
    meta = support::read_safetensors_metadata(checkpoint);
  } catch (const support::SafetensorsError& e) {
    throw ConfigError(fmt::format("{} (given as --init, the model to start from)", e.what()));
  }
  // (another model program's checkpoint has other layers under the same names: it loaded silently)
  if (const auto program = meta.find("model"); program != meta.end() && program->second != model_program)
    throw ConfigError(fmt::format("--init {}: a checkpoint of model '{}', and this is model '{}', whose layers differ: "
                                  "start it from a checkpoint of its own (or fresh)",
                                  checkpoint.string(), program->second, model_program));
  const std::optional<ModelConfig> recorded = model_of_record(meta, checkpoint.string());
  if (!recorded)
    throw ConfigError(fmt::format("{}: no [model] section, and --init {} records no model (Hugging Face weights, or a "
                                  "checkpoint of a bertc from before records): write the model's sizes under [model], "
                                  "or start from a Hugging Face folder (--init DIR), whose config.json gives them",
                                  config.source, checkpoint.string()));
  const std::string source = fmt::format("{} (its model record)", checkpoint.string());
  merge_recorded_model(config, *recorded, source, "the checkpoint's record");
  // The tokenizer too, where the config names none, as a folder's vocab.txt is taken: the file the
  // checkpoint records (its tokens are checked against the record when the weights are read).
  if (const auto vocab = meta.find("vocab"); vocab != meta.end() && !config.given.count("train.vocab"))
    config.train.vocab = vocab->second;
  if (const auto lower = support::metadata_flag(meta, "do_lower_case", source);
      lower && !config.given.count("train.do_lower_case"))
    config.train.do_lower_case = *lower;
  validate(config, {source, kRecordFix});
}

}  // namespace

void take_model_from(Config& config, const std::filesystem::path& init, const std::string& model_program) {
  std::error_code ec;
  if (!init.empty() && std::filesystem::is_directory(init, ec) && !is_hf_folder(init))
    throw ConfigError(fmt::format("{}: a folder without config.json, given as the model to start from (--init, or "
                                  "[finetune] init); a Hugging Face model folder has one (and model.safetensors)",
                                  init.string()));
  if (!init.empty() && is_hf_folder(init)) {
    if (model_program != "bert")
      throw ConfigError(fmt::format("--init {}: a Hugging Face BERT folder, and model '{}' has other layers: start it "
                                    "from one of its own checkpoints (or fresh)",
                                    init.string(), model_program));
    use_hf_model(config, init);
    return;
  }
  if (!init.empty() && std::filesystem::is_regular_file(init, ec) && (!config.model_section || records_model(init))) {
    use_recorded_model(config, init, model_program);
    return;
  }
  if (!config.model_section)
    throw ConfigError(fmt::format("{}: no [model] section: write the model's sizes under [model] (see "
                                  "examples/bert-tiny.toml), or an empty [model] for BERT-base's defaults; or start "
                                  "from a Hugging Face folder (--init DIR), whose config.json gives them, or a bertc "
                                  "checkpoint (--init FILE), whose record does (a run started from one resumes with "
                                  "the same --init)",
                                  config.source));
  validate(config);
}

std::optional<ModelConfig> recorded_model(const std::filesystem::path& init, const std::string& model_program,
                                          const Config& run) {
  std::error_code ec;
  if (!is_hf_folder(init) && !(std::filesystem::is_regular_file(init, ec) && records_model(init))) return std::nullopt;
  Config probe = run;  // (no [model] of its own: the record gives every key)
  probe.model = ModelConfig{};
  probe.model_section = false;
  std::erase_if(probe.given, [](const std::string& key) { return key.starts_with("model."); });
  take_model_from(probe, init, model_program);
  return probe.model;
}

nlohmann::json hf_config_json(const ModelConfig& model, HfHead head, int64_t num_labels, bool regression,
                              const std::vector<std::string>& labels) {
  nlohmann::json j = model_json(model);
  j["model_type"] = "bert";
  j["hidden_act"] = "gelu";
  j["position_embedding_type"] = "absolute";
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

namespace {

// A tokenizer file's special tokens (cls_token... as a string, or as transformers writes an added
// token, {"content": ...}): BERT's own, which bertc's tokenizer uses; another is refused naming it.
void special_tokens(const nlohmann::json& j, const std::filesystem::path& file) {
  if (!j.is_object()) throw ConfigError(fmt::format("{}: not a JSON object", file.string()));
  static const std::pair<const char*, const char*> roles[] = {
      {"cls_token", "[CLS]"}, {"sep_token", "[SEP]"}, {"pad_token", "[PAD]"}, {"mask_token", "[MASK]"}, {"unk_token", "[UNK]"}};
  for (const auto& [key, bert] : roles) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) continue;
    const nlohmann::json& token = it->is_object() && it->contains("content") ? it->at("content") : *it;
    if (!token.is_string() || token.get<std::string>() != bert)
      throw ConfigError(fmt::format("{}: {} is {}, and bertc's tokenizer uses BERT's {} for it (and its id in "
                                    "vocab.txt): use the model with the tokenizer it was made with, or write \"{}\" "
                                    "if that is the token the model was trained with",
                                    file.string(), key, token.dump(), bert, bert));
  }
}

// special_tokens_map.json's tokens, where the folder has one, checked as special_tokens does.
void special_tokens_map(const std::filesystem::path& folder) {
  const std::filesystem::path map = folder / "special_tokens_map.json";
  if (!support::non_regular_kind(map).empty()) return;
  std::ifstream in(map);
  if (!in) return;
  nlohmann::json m;
  try {
    m = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(fmt::format("{}: not JSON: {}", map.string(), e.what()));
  }
  special_tokens(m, map);
}

}  // namespace

HfTokenizerSettings hf_tokenizer_settings(const std::filesystem::path& folder) {
  const std::filesystem::path file = folder / "tokenizer_config.json";
  if (const std::string kind = support::non_regular_kind(file); !kind.empty())
    throw ConfigError(fmt::format("{}: {}, not a file (opening a pipe would wait for ever): put the folder's "
                                  "tokenizer_config.json back as a file",
                                  file.string(), kind));
  std::ifstream in(file);
  HfTokenizerSettings s;
  if (!in) {  // (the special tokens' own file, where the folder has it alone)
    special_tokens_map(folder);
    return s;
  }
  s.file = true;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(fmt::format("{}: not JSON: {}", file.string(), e.what()));
  }
  if (!j.is_object())
    throw ConfigError(fmt::format("{}: not a JSON object of the tokenizer's settings: restore it (bertc export writes "
                                  "one)",
                                  file.string()));
  // (a setting of another kind: transformers tests it for truth, 0 false and "false" true; which
  // one the folder meant is not bertc's to guess)
  const auto flag = [&](const char* key, bool null_allowed) -> std::optional<bool> {
    const auto it = j.find(key);
    if (it == j.end() || (null_allowed && it->is_null())) return std::nullopt;
    if (!it->is_boolean())
      throw ConfigError(fmt::format("{}: {} is {}, not true or false{}: write the one the tokenizer was trained with",
                                    file.string(), key, it->dump(), null_allowed ? " (or null)" : ""));
    return it->get<bool>();
  };
  s.do_lower_case = flag("do_lower_case", false);
  s.strip_accents = flag("strip_accents", true);
  // Settings that make other tokens than bertc's tokenizer (BertTokenizer's defaults) makes: refused,
  // never ignored (tokenize_chinese_chars false kept CJK runs whole there, split here).
  const auto refuse = [&](const std::string& what, const std::string& fix) {
    throw ConfigError(fmt::format("{}: {}, and bertc's tokenizer is BertTokenizer with its defaults (the same text "
                                  "would make other tokens): {}",
                                  file.string(), what, fix));
  };
  for (const char* key : {"tokenize_chinese_chars", "do_basic_tokenize"})
    if (!flag(key, true).value_or(true))
      refuse(fmt::format("{} is false", key), "use the model with the tokenizer it was made with, or set it to true if "
                                              "the model was trained with BertTokenizer's defaults");
  if (const auto never = j.find("never_split"); never != j.end() && !never->is_null() && !(never->is_array() && never->empty()))
    refuse(fmt::format("never_split is {}", never->dump()), "remove it if the model was trained without it");
  if (const auto kind = j.find("tokenizer_class"); kind != j.end() && !kind->is_null() &&
                                                   *kind != "BertTokenizer" && *kind != "BertTokenizerFast")
    refuse(fmt::format("tokenizer_class is {}", kind->dump()), "fine-tune a BERT model with a WordPiece vocabulary");
  special_tokens(j, file);
  special_tokens_map(folder);
  return s;
}

}  // namespace bertc::run_config
