// Hugging Face model folders' config.json: read into a config's [model] (--init DIR), and written
// from one (bertc export). Only what bertc's BERT computes is accepted: exact GELU, absolute
// position embeddings, an encoder (no decoder or cross-attention).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "run_config/config.h"

namespace bertc::run_config {

// Whether `path` is a Hugging Face model folder: a directory with a config.json.
bool is_hf_folder(const std::filesystem::path& path);
// What the config.json of Hugging Face weights says of their head: of `weights`, a model folder or
// a .safetensors file in one; empty fields where the file or a key is absent. Throws ConfigError
// naming the file when it is there but not a JSON object, or its id2label's keys are not 0..N-1
// (what a class number means would be a guess).
struct HfHeadRecord {
  std::string architecture;         // "BertForSequenceClassification", ...
  std::string problem_type;         // "regression", "single_label_classification", ...
  int64_t classes = 0;              // id2label's entries, else num_labels; 0 where neither is given
  std::vector<std::string> labels;  // id2label's names in class order; empty where they are LABEL_i
};
HfHeadRecord hf_head_record(const std::filesystem::path& weights);

// Sets config.model from folder/config.json, and the tokenizer ([train] vocab, do_lower_case) from
// the folder's vocab.txt and tokenizer_config.json unless the config sets them (a vocab.txt other
// than the folder's is refused). A [model] key the config's text also sets must agree with it,
// but for dropout and initializer_range, which the config overrides. Throws ConfigError naming the
// file, the key and the fix for a model bertc cannot run (model_type other than bert, hidden_act
// other than gelu, position_embedding_type other than absolute, a decoder, an untied decoder, a
// classifier_dropout of its own), a value of the wrong type or range, or a disagreement.
void use_hf_model(Config& config, const std::filesystem::path& folder);

// What a Hugging Face folder's tokenizer_config.json says of BertTokenizer's text handling: the one
// reader of the file. Absent keys (or file): none. Throws ConfigError naming the file for one that
// is not a file, not JSON or not an object, and for a do_lower_case other than true or false or a
// strip_accents other than true, false or null (transformers takes 0 as false and "false" as true:
// bertc does not guess which the folder meant).
struct HfTokenizerSettings {
  bool file = false;                   // the folder has tokenizer_config.json
  std::optional<bool> do_lower_case;
  std::optional<bool> strip_accents;   // (null or absent: none, and BertTokenizer follows do_lower_case)
};
HfTokenizerSettings hf_tokenizer_settings(const std::filesystem::path& folder);

// The model of a config loaded without requiring [model] (load_config(..., false)): a Hugging Face
// folder's, when `init` is one (use_hf_model), or the model a bertc checkpoint `init` records
// (the keys the config's [model] sets must agree with either, as use_hf_model says), else the
// config's own [model] (refused without one, naming --init), its relations checked. A folder without config.json is refused, and a
// folder for a model program other than bertc's BERT (`model_program`: its layers differ).
void take_model_from(Config& config, const std::filesystem::path& init, const std::string& model_program);

// Whether [model] key `key` leaves the network's shape alone (dropout, the init of fresh weights),
// so a run may set it otherwise than the weights' record, as from_pretrained's keyword arguments do.
bool overrides_a_record(std::string_view key);

// The model `init` records — a Hugging Face folder's config.json, a bertc checkpoint's record —
// read and checked as take_model_from reads it (another model_type, hidden_act... refused; with
// `run`'s other sections, its [model] left out: seq_len against max_position_embeddings...);
// none for weights that record no model. What a compiled program's --init is held against.
std::optional<ModelConfig> recorded_model(const std::filesystem::path& init, const std::string& model_program,
                                          const Config& run);

// What a checkpoint's model is exported as (bertc export --for).
enum class HfHead { Pretraining, Base, SequenceClassification, TokenClassification };
BERTC_ENUM_NAMES(HfHead, {HfHead::Pretraining, "pretraining"}, {HfHead::Base, "base"},
                 {HfHead::SequenceClassification, "sequence-classification"},
                 {HfHead::TokenClassification, "token-classification"})

// [model] keys in Hugging Face's names, as a JSON object (what a checkpoint records as
// "model_config", and the core of config.json).
nlohmann::json model_json(const ModelConfig& model);
// The same read back, every key checked as a config's is; `source` names it in errors. A key
// missing takes BERT-base's value, as Hugging Face's BertConfig does (a folder's config.json).
ModelConfig model_from_json(const nlohmann::json& j, const std::string& source);
// The model a bertc checkpoint's metadata records ("model_config": every [model] key, as
// model_json writes them), or nullopt where it records none. A record lacking a key, holding
// another, naming one twice, or contradicting the run's settings recorded beside it
// ("config_settings") is refused as damaged (ConfigError naming `source`): no BERT-base default
// fills a bertc record.
std::optional<ModelConfig> model_of_record(const std::map<std::string, std::string>& meta, const std::string& source);

// A config.json transformers' from_pretrained reads: the model keys, the architecture of `head`,
// and for classification num_labels (id2label, label2id from `labels`, else LABEL_i) and
// problem_type (regression: one label).
nlohmann::json hf_config_json(const ModelConfig& model, HfHead head, int64_t num_labels, bool regression,
                              const std::vector<std::string>& labels);

}  // namespace bertc::run_config
