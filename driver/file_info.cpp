// bertc info on checkpoints, run folders, Hugging Face folders and other safetensors (see file_info.h).
#include "driver/file_info.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "data/vocab.h"
#include "data/vocab_identity.h"
#include "run_config/hf_config.h"
#include "support/file_errors.h"
#include "support/safetensors.h"
#include "run_folder/checkpoint.h"
#include "run_folder/records.h"

namespace bertc::driver {
namespace {

using Metadata = std::map<std::string, std::string>;

std::string value_of(const Metadata& meta, const char* key) {
  const auto it = meta.find(key);
  return it == meta.end() ? std::string("-") : it->second;
}

// (with the text's lower-casing where the file records it: eval refuses weights and a batch that differ)
std::string vocab_line(const Metadata& meta) {
  return fmt::format("vocab        {} ({} tokens, xxh3 {}){}\n", value_of(meta, "vocab"), value_of(meta, "vocab_tokens"),
                     value_of(meta, "vocab_xxh3"),
                     meta.count("do_lower_case") ? fmt::format(", do_lower_case = {}", meta.at("do_lower_case")) : "");
}

// What a checkpoint's record says, one line a fact: where it stands, what it was trained with,
// its vocabulary.
std::string checkpoint_text(const Metadata& meta, const std::string& path) {
  auto of = [&](const char* key) { return value_of(meta, key); };
  std::string out = fmt::format("checkpoint   {} ({})\n", path, of("format"));
  out += fmt::format("step         {}\n", of("step"));
  out += fmt::format("model        {} (config {})\n", of("model"), of("config"));
  if (meta.count("finetune_task"))
    out += fmt::format("fine-tuned   {}, {} labels{}, epoch {}\n", of("finetune_task"), of("num_labels"),
                       of("labels") == "-" || of("labels").empty() ? "" : " (" + of("labels") + ")", of("epoch"));
  out += fmt::format("trained      {} optimizer, {} precision, dropout {}, seed {}\n", of("optimizer"), of("precision"),
                     of("dropout"), of("seed"));
  out += fmt::format("batch        {} a micro-batch, global {}, seq_len {}\n", of("batch_size"), of("global_batch"),
                     of("seq_len"));
  return out + vocab_line(meta) + "(bertc info --json FILE: the whole record)\n";
}

// The record of checkpoint `path`, once its checksums hold.
Metadata verified_record(const std::string& path) {
  const support::Safetensors file = support::read_safetensors(path);
  run_folder::verify_checksums(file, path);
  // (and its records' forms: info showed an edited "dropout maybe" or "step -1" as a fact, where
  // every command that reads the file refuses it)
  const auto classifier = file.tensors.find("classifier.weight");
  run_folder::check_checkpoint_record(file.metadata,
                                 classifier == file.tensors.end() ? std::nullopt
                                                                  : std::optional<ir::Shape>(classifier->second.shape),
                                 path);
  return file.metadata;
}

// What a safetensors file that is no checkpoint is, by its format ("pt": Hugging Face's; bertc's
// own outputs say theirs).
std::string other_kind(const Metadata& meta) {
  const std::string format = value_of(meta, "format");
  if (format == "bertc-batch" && meta.count("finetune_task"))  // (what eval checks its class numbers by)
    return fmt::format("a batch of task examples of bertc batch (the input of bertc eval --batch), {}{}",
                       value_of(meta, "finetune_task"),
                       value_of(meta, "finetune_task") == "regression" ? ""  // (targets, no classes)
                       : value_of(meta, "labels").empty()              ? ", classes by number"
                                                           : fmt::format(", classes {}", value_of(meta, "labels")));
  if (format == "bertc-batch") return "a micro-batch of bertc batch (the input of bertc eval --batch)";
  if (format.starts_with("bertc-")) return fmt::format("an output of bertc eval ({})", format.substr(6));
  if (meta.count("vocab_xxh3")) return "Hugging Face weights written by bertc export (a model folder's model.safetensors)";
  return "weights with Hugging Face names, or another safetensors file (no bertc record)";
}

void describe_run_folder(const std::string& path, const std::vector<run_folder::CheckpointFile>& kept, bool json,
                         std::ostream& out) {
  // The newest file that is a checkpoint (a batch or a dump named as one is said, not shown as a
  // checkpoint of blank record: --resume refuses the folder while it is there).
  std::vector<std::string> not_checkpoints;
  const std::optional<run_folder::CheckpointFile> newest = run_folder::newest_checkpoint(kept, not_checkpoints);
  std::vector<int64_t> steps;
  for (const run_folder::CheckpointFile& c : kept) steps.push_back(c.step);
  const std::vector<run_folder::CheckpointFile> best = run_folder::list_checkpoints(std::filesystem::path(path) / "best");
  const Metadata meta = newest ? verified_record(newest->path.string()) : Metadata{};
  if (json) {
    out << nlohmann::json({{"run_folder", path}, {"checkpoint_steps", steps},
                           {"newest", newest ? newest->path.string() : ""}, {"record", meta},
                           {"not_checkpoints", not_checkpoints},
                           {"best", best.empty() ? "" : best.back().path.string()}})
               .dump(2)
        << "\n";
    return;
  }
  out << fmt::format("run folder   {}: {} file(s) named as checkpoints, of steps {}\n", path, kept.size(),
                     fmt::join(steps, ", "));
  for (const std::string& file : not_checkpoints)
    out << fmt::format("not one      {}: not a checkpoint, and --resume refuses the folder until it is moved out\n",
                       file);
  if (!best.empty()) out << fmt::format("best         {} (the best epoch's, of fine-tuning)\n", best.back().path.string());
  if (newest) out << checkpoint_text(meta, newest->path.string());
}

void describe_hf_folder(const std::string& path, bool json, std::ostream& out) {
  const std::filesystem::path folder(path);
  nlohmann::json config;
  try {
    std::ifstream in(folder / "config.json");
    config = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(fmt::format("{}: not JSON: {}", (folder / "config.json").string(), e.what()));
  }
  if (!config.is_object())
    throw std::invalid_argument(fmt::format("{}: not a JSON object", (folder / "config.json").string()));
  std::error_code ec;
  std::filesystem::path weights = folder / "model.safetensors";
  std::string weights_text = weights.string();
  // (sharded weights: the index's files, the first one's record; bertc reads such folders too)
  if (const std::filesystem::path index = folder / "model.safetensors.index.json";
      !std::filesystem::exists(weights, ec) && std::filesystem::is_regular_file(index, ec)) {
    std::set<std::string> shards;
    try {
      std::ifstream in(index);
      const nlohmann::json j = nlohmann::json::parse(in);
      for (const auto& [tensor, file] : j.at("weight_map").items()) shards.insert(file.get<std::string>());
    } catch (const nlohmann::json::exception& e) {
      throw std::invalid_argument(fmt::format("{}: not an index of shards: {}", index.string(), e.what()));
    }
    if (!shards.empty()) {
      weights = folder / *shards.begin();
      weights_text = fmt::format("{} ({} shard(s): {})", index.string(), shards.size(), fmt::join(shards, ", "));
    }
  }
  const bool has_weights = std::filesystem::is_regular_file(weights, ec);
  const Metadata meta = has_weights ? support::read_safetensors_metadata(weights) : Metadata{};
  if (json) {
    out << nlohmann::json({{"hf_folder", path}, {"config", config}, {"weights", has_weights ? weights_text : ""},
                           {"weights_metadata", meta}})
               .dump(2)
        << "\n";
    return;
  }
  auto number = [&](const char* key) { return config.contains(key) ? config[key].dump() : std::string("-"); };
  const std::string architecture =
      config.contains("architectures") && config["architectures"].is_array() && !config["architectures"].empty()
          ? config["architectures"][0].dump()
          : std::string("-");
  out << fmt::format("model folder {}: a Hugging Face model, {}\n", path, architecture);
  out << fmt::format("sizes        hidden_size {}, num_hidden_layers {}, num_attention_heads {}, vocab_size {}\n",
                     number("hidden_size"), number("num_hidden_layers"), number("num_attention_heads"),
                     number("vocab_size"));
  if (config.contains("id2label")) out << fmt::format("labels       {}\n", config["id2label"].dump());
  out << fmt::format("weights      {}\n", has_weights ? weights_text : "none (no model.safetensors)");
  // The folder's own vocab.txt (what training from the folder reads), checked against the one the
  // weights record (it showed the record's path, of a folder since moved or edited, exit 0).
  if (std::filesystem::is_regular_file(folder / "vocab.txt", ec)) {
    const data::VocabRecord own = data::record_of(data::Vocab::load(folder / "vocab.txt"));
    out << fmt::format("vocab        {}\n", own.describe());
    if (const auto recorded = data::vocab_from_metadata(meta); recorded && recorded->xxh3 != own.xxh3)
      out << fmt::format("warning      the weights were exported with another vocabulary, {}: training from this folder "
                         "refuses its vocab.txt until the exported one is put back\n",
                         recorded->describe());
  } else if (meta.count("vocab_xxh3")) {
    out << vocab_line(meta);
  }
  out << "(bertc info --json DIR: config.json and the weights' record whole)\n";
}

}  // namespace

void describe_folder(const std::string& path, bool json, std::ostream& out) {
  if (run_config::is_hf_folder(path)) return describe_hf_folder(path, json, out);
  const std::vector<run_folder::CheckpointFile> kept = run_folder::list_checkpoints(path);
  if (!kept.empty()) return describe_run_folder(path, kept, json, out);
  throw std::invalid_argument(fmt::format("{}: a folder with neither checkpoints (a run folder) nor config.json (a "
                                          "Hugging Face model folder): give one of those, or a file (a .bertx, a "
                                          "training executable, a checkpoint)",
                                          path));
}

void describe_safetensors(const std::string& path, bool json, std::ostream& out) {
  Metadata meta;
  try {
    meta = support::read_safetensors_metadata(path);
  } catch (const std::exception& e) {
    if (path.ends_with(".safetensors") || !support::content_kind(path).empty()) throw std::invalid_argument(e.what());
    throw std::invalid_argument(fmt::format("{}: neither a .bertx, a training executable nor a safetensors file "
                                            "(checkpoints are a run folder's checkpoint-NNNNNN.safetensors; bertc "
                                            "compile -o FILE.bertx, or --executable -o NAME, makes programs)",
                                            path));
  }
  if (run_folder::is_checkpoint_record(meta)) {
    const Metadata record = verified_record(path);
    out << (json ? nlohmann::json(record).dump(2) + "\n" : checkpoint_text(record, path));
    return;
  }
  if (value_of(meta, "format") == "bertc-batch") run_folder::check_batch_record(meta, path);
  if (json) {
    out << nlohmann::json({{"safetensors", path}, {"kind", other_kind(meta)}, {"metadata", meta}}).dump(2) << "\n";
    return;
  }
  out << fmt::format("safetensors  {}: {}, format '{}'; not a checkpoint (no training record)\n", path,
                     other_kind(meta), value_of(meta, "format"));
  if (meta.count("vocab_xxh3")) out << vocab_line(meta);
}

}  // namespace bertc::driver
