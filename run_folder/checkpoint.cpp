// Checkpoint files: naming, listing, saving with pruning, strict loading, pretrained loading.
#include "run_folder/checkpoint.h"
#include "run_folder/run_lock.h"

#include <algorithm>
#include <charconv>
#include <cerrno>
#include <cmath>
#include <fstream>
#include <regex>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <xxhash.h>

#include "ir/value_names.h"
#include "support/file_errors.h"
#include "support/safetensors.h"

namespace bertc::run_folder {
namespace {

// A checkpoint's checksums, in its own metadata: "xxh3.<tensor>" for each tensor's bytes (with its
// dtype and shape), and "xxh3.__metadata__" for every other metadata entry.
constexpr const char* kChecksumPrefix = "xxh3.";
constexpr const char* kMetadataChecksum = "xxh3.__metadata__";

std::string hex(uint64_t v) { return fmt::format("{:016x}", v); }

std::string tensor_checksum(const support::StoredTensor& t) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  const std::string head = fmt::format("{}{}", ir::dtype_name(t.dtype), ir::shape_string(t.shape));
  XXH3_64bits_update(state, head.data(), head.size());
  XXH3_64bits_update(state, t.bytes.data(), t.bytes.size());
  const uint64_t sum = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return hex(sum);
}

std::string metadata_checksum(const std::map<std::string, std::string>& metadata) {
  std::string text;
  for (const auto& [key, value] : metadata)
    if (!key.starts_with(kChecksumPrefix)) text += fmt::format("{}={}\n", key, value);
  return hex(XXH3_64bits(text.data(), text.size()));
}

void add_checksums(support::Safetensors& file) {
  for (const auto& [name, tensor] : file.tensors) file.metadata[kChecksumPrefix + name] = tensor_checksum(tensor);
  file.metadata[kMetadataChecksum] = metadata_checksum(file.metadata);
}

}  // namespace

// What to do with a damaged checkpoint, whoever reads it (--resume, --init, export, eval).
constexpr const char* kDamaged = "use another copy, or an older checkpoint of the run; to --resume from the one "
                                 "before, move this one aside";

void verify_checksums(const support::Safetensors& file, const std::string& where) {
  const auto it = file.metadata.find(kMetadataChecksum);
  const auto format = file.metadata.find("format");
  const bool required = format != file.metadata.end() && format->second == "bertc-checkpoint-2";
  if (it == file.metadata.end()) {
    if (!required) return;  // a file from elsewhere, or from a bertc before checksums
    throw support::SafetensorsError(fmt::format("{}: a bertc-checkpoint-2 without its metadata checksum: the file is "
                                                "damaged ({})",
                                                where, kDamaged));
  }
  if (it->second != metadata_checksum(file.metadata))
    throw support::SafetensorsError(fmt::format("{}: its metadata does not match its checksum: the file is damaged "
                                                "({})",
                                                where, kDamaged));
  for (const auto& [name, tensor] : file.tensors) {
    const auto sum = file.metadata.find(kChecksumPrefix + name);
    if (sum == file.metadata.end())
      throw support::SafetensorsError(fmt::format("{}: tensor '{}' has no checksum though the file has checksums: "
                                                  "the file is damaged ({})",
                                                  where, name, kDamaged));
    if (sum->second != tensor_checksum(tensor))
      throw support::SafetensorsError(fmt::format("{}: tensor '{}' does not match its checksum: the file is damaged "
                                                  "({})",
                                                  where, name, kDamaged));
  }
  for (const auto& [key, value] : file.metadata)
    if (key.starts_with(kChecksumPrefix) && key != kMetadataChecksum &&
        !file.tensors.count(key.substr(std::string_view(kChecksumPrefix).size())))
      throw support::SafetensorsError(fmt::format("{}: the checksum of tensor '{}' is there, the tensor is not: the "
                                                  "file is damaged ({})",
                                                  where, key.substr(std::string_view(kChecksumPrefix).size()), kDamaged));
}

void check_finite(const std::string& name, const support::HostTensor& t, const std::string& where) {
  for (size_t i = 0; i < t.real.size(); ++i)
    if (!std::isfinite(t.real[i]))
      throw support::SafetensorsError(fmt::format("{}: tensor '{}' holds {} at element {}: the run diverged before "
                                                  "this checkpoint, or the file is damaged ({})",
                                                  where, name, t.real[i], i, kDamaged));
}

std::filesystem::path checkpoint_path(const std::filesystem::path& dir, int64_t step) {
  return dir / fmt::format("checkpoint-{:06d}.safetensors", step);
}

std::optional<int64_t> checkpoint_step_of(const std::string& file_name) {
  // checkpoint-<digits of a step int64_t holds>.safetensors (every step a run may reach: one of
  // 16 digits and more was passed over, so a resume began before it)
  constexpr std::string_view prefix = "checkpoint-", suffix = ".safetensors";
  if (!file_name.starts_with(prefix) || !file_name.ends_with(suffix)) return std::nullopt;
  const std::string digits = file_name.substr(prefix.size(), file_name.size() - prefix.size() - suffix.size());
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  int64_t step = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
  if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return step;
}

bool is_checkpoint_record(const std::map<std::string, std::string>& metadata) {
  const auto format = metadata.find("format");
  return format != metadata.end() && format->second.starts_with("bertc-checkpoint-");
}

std::optional<CheckpointFile> newest_checkpoint(const std::vector<CheckpointFile>& files,
                                                std::vector<std::string>& not_checkpoints) {
  for (auto it = files.rbegin(); it != files.rend(); ++it) {
    std::string why;
    try {
      const auto meta = support::read_safetensors_metadata(it->path);
      if (is_checkpoint_record(meta)) return *it;
      why = fmt::format("format {}", meta.count("format") ? meta.at("format") : "none");
    } catch (const std::exception&) {
      why = "unreadable as safetensors: cut short, or another kind of file";
    }
    not_checkpoints.push_back(fmt::format("{} ({})", it->path.filename().string(), why));
  }
  return std::nullopt;
}

void refuse_run_folder_as_weights(const std::filesystem::path& path, const std::string& option) {
  std::error_code ec;
  if (path.empty() || std::filesystem::exists(path / "config.json", ec)) return;
  const std::vector<CheckpointFile> kept = list_checkpoints(path), best = list_checkpoints(path / "best");
  if (kept.empty() && best.empty()) return;
  // The newest that is a checkpoint (a file cut short, or another kind under a checkpoint's name,
  // is said, not offered: it was, and the advice failed next).
  std::vector<std::string> not_checkpoints;
  std::vector<std::string> give;
  if (const auto b = newest_checkpoint(best, not_checkpoints))
    give.push_back(fmt::format("{} (its best epoch's)", b->path.string()));
  if (const auto k = newest_checkpoint(kept, not_checkpoints))
    give.push_back(fmt::format("{} (its newest)", k->path.string()));
  const std::string said = not_checkpoints.empty() ? "" : fmt::format(" (not a checkpoint, though named as one: {})",
                                                                       fmt::join(not_checkpoints, ", "));
  if (give.empty())
    throw std::invalid_argument(fmt::format("{} {}: a run folder, not weights, and it holds no checkpoint{}: give a "
                                            "checkpoint file",
                                            option, path.string(), said));
  throw std::invalid_argument(fmt::format("{} {}: a run folder, not weights: give one of its checkpoints, {}{}", option,
                                          path.string(), fmt::join(give, ", or "), said));
}

std::vector<CheckpointFile> list_checkpoints(const std::filesystem::path& dir) {
  std::vector<CheckpointFile> out;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return out;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (const auto step = checkpoint_step_of(entry.path().filename().string()); step && !entry.is_directory(ec))
      out.push_back({entry.path(), *step});  // (a folder of that name is no checkpoint: its writer says so)
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
  return out;
}

namespace {

// Whether the checkpoint at `path` is of the run `metadata` names (kRunIdKey), which rotation may
// delete: every checkpoint when the run has no name; none whose header does not read.
bool of_same_run(const std::filesystem::path& path, const std::map<std::string, std::string>& metadata) {
  const auto run = metadata.find(kRunIdKey);
  if (run == metadata.end()) return true;
  try {
    const std::map<std::string, std::string> theirs = support::read_safetensors_metadata(path);
    const auto it = theirs.find(kRunIdKey);
    return it != theirs.end() && it->second == run->second;
  } catch (const support::SafetensorsError&) {
    return false;
  }
}

}  // namespace

void save_checkpoint(const std::filesystem::path& dir, int64_t step, const TensorManifest& manifest,
                     const support::Environment& env, std::map<std::string, std::string> metadata, int64_t keep,
                     const support::Environment& exchange, const std::string& again, int64_t room_for) {
  std::filesystem::create_directories(dir);
  // A diverged run's weights are not saved: rotation would then delete the last good checkpoints.
  for (const auto& [name, type] : manifest)
    check_finite(name, env.at(name), fmt::format("step {}'s checkpoint, not written (the older ones are kept)", step));
  support::Safetensors file;
  for (const auto& [name, type] : manifest) file.tensors[name] = support::to_stored(env.at(name));
  for (const auto& [name, tensor] : exchange) {
    if (!name.starts_with(kExchangeStatePrefix) || manifest.count(name))
      throw std::logic_error(fmt::format("exchange state '{}' is not named {}*", name, kExchangeStatePrefix));
    file.tensors[name] = support::to_stored(tensor);
  }
  metadata["format"] = "bertc-checkpoint-2";  // (2: checksummed)
  metadata["step"] = std::to_string(step);
  file.metadata = std::move(metadata);
  add_checksums(file);
  const std::filesystem::path path = checkpoint_path(dir, step);
  try {
    support::write_safetensors(path, file);
  } catch (const std::runtime_error& e) {  // (a full disk, a file size limit: nothing half-written is left)
    // (the checkpoints really kept: files, and not this step's name, which may be a folder in the way)
    std::vector<CheckpointFile> kept;
    for (const CheckpointFile& c : list_checkpoints(dir))
      if (std::error_code ec; c.step != step && std::filesystem::is_regular_file(c.path, ec)) kept.push_back(c);
    // What to fix, by the write's errno: room, or the right to write there.
    const auto* failed = dynamic_cast<const support::FileError*>(&e);
    std::string fix =
        failed ? support::file_error_fix(failed->code().value(), path,
                                         failed->needed() * static_cast<uint64_t>(std::max<int64_t>(1, room_for)))
               : "";
    if (std::error_code ec; std::filesystem::is_directory(path, ec))
      fix = fmt::format("a folder is where step {}'s checkpoint goes: move {} out of the run folder", step,
                        path.string());
    if (fix.empty()) fix = "fix what the error above says";
    // (said, or the figure reads as several times one checkpoint's size for no reason)
    else if (failed && failed->needed() && room_for > 1)
      fix += fmt::format(" (the room of {} checkpoints: the most the run holds at once)", room_for);
    if (!again.empty()) throw std::runtime_error(fmt::format("{}: {}, then {}", e.what(), fix, again));
    // (to write elsewhere is to move the run: "the same command with --resume" found no
    // checkpoint in another folder)
    throw std::runtime_error(
        kept.empty() ? fmt::format("{}: no checkpoint of this run is written yet; {}: then run the same command again "
                                   "(elsewhere: with another --checkpoint-dir)",
                                   e.what(), fix)
                     : fmt::format("{}: the older checkpoints are kept (newest: step {}); {}: then run the same "
                                   "command with --resume (elsewhere: move {} whole to a disk with room and run it "
                                   "with --checkpoint-dir THERE --resume)",
                                   e.what(), kept.back().step, fix, dir.string()));
  }
  // Only once the new checkpoint is durable and reads back whole may older ones go, with
  // temporaries a killed run left behind (one training run writes to a folder at a time: the
  // run folder's lock).
  try {
    verify_checksums(support::read_safetensors(path), path.string());
  } catch (const support::SafetensorsError& e) {
    throw support::SafetensorsError(fmt::format("{} (read back after writing it: the disk or file system damaged it; "
                                                "the older checkpoints are kept)",
                                                e.what()));
  }
  std::vector<CheckpointFile> of_run;
  for (const CheckpointFile& c : list_checkpoints(dir))
    if (c.path == path || of_same_run(c.path, file.metadata)) of_run.push_back(c);
  for (size_t i = 0; i + keep < of_run.size(); ++i) std::filesystem::remove(of_run[i].path);
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string file = entry.path().filename().string();
    // (a file cut short, as a checkpoint's temporary is: a folder or a file of other bytes under
    // that name is not one, and stays)
    if (file.starts_with(".checkpoint-") && is_run_temporary(entry)) std::filesystem::remove(entry.path());
  }
}

CheckpointContents load_checkpoint(const std::filesystem::path& path, const TensorManifest& manifest, support::Environment& env) {
  const support::Safetensors file = support::read_safetensors(path);
  const std::string where = path.string();
  verify_checksums(file, where);
  auto meta = [&](const std::string& key) {
    auto it = file.metadata.find(key);
    if (it == file.metadata.end())
      throw support::SafetensorsError(fmt::format("{}: no '{}' in its metadata: not a bertc checkpoint", where, key));
    return it->second;
  };
  if (meta("format") != "bertc-checkpoint-1" && meta("format") != "bertc-checkpoint-2")
    throw support::SafetensorsError(fmt::format("{}: format '{}' is not bertc-checkpoint-1 or -2 (a newer bertc's?)",
                                                where, meta("format")));
  for (const auto& [name, stored] : file.tensors)
    if (name.starts_with(kExchangeStatePrefix))
      env[name] = support::to_host(stored, stored.dtype, fmt::format("{}: tensor '{}'", where, name));
    else if (!manifest.count(name))
      throw support::SafetensorsError(fmt::format("{}: tensor '{}' is not part of this model and optimizer (a checkpoint of "
                                         "another config?)", where, name));
  for (const auto& [name, type] : manifest) {
    auto it = file.tensors.find(name);
    if (it == file.tensors.end())
      throw support::SafetensorsError(fmt::format("{}: tensor '{}' is missing (a checkpoint of another config?)", where, name));
    if (it->second.shape != type.shape)
      throw support::SafetensorsError(fmt::format("{}: tensor '{}' is {}{}, the model needs {}", where, name,
                                         ir::dtype_name(it->second.dtype), ir::shape_string(it->second.shape),
                                         to_string(type)));
    env[name] = support::to_host(it->second, type.dtype, fmt::format("{}: tensor '{}'", where, name));
    check_finite(name, env[name], where);
  }
  int64_t step = 0;
  try {
    size_t used = 0;
    step = std::stoll(meta("step"), &used);
    if (used != meta("step").size()) throw std::invalid_argument("trailing characters");
  } catch (const std::logic_error&) {
    throw support::SafetensorsError(fmt::format("{}: metadata step '{}' is not a number", where, meta("step")));
  }
  if (step < 1)
    throw support::SafetensorsError(fmt::format("{}: metadata step {} is not a step a checkpoint is written at (1 or "
                                                "more): the file is damaged ({})",
                                                where, step, kDamaged));
  return {step, file.metadata};
}

bool is_optimizer_state(const std::string& name) {
  namespace names = ir::names;
  return ir::names_optimizer_state(name) || name == names::kOptimizerStep || name == names::kLossScale || name == names::kLossScaleGoodSteps ||
         name.starts_with(kExchangeStatePrefix);
}

std::vector<std::filesystem::path> hf_weight_files(const std::filesystem::path& folder,
                                                   std::map<std::string, std::string>* weight_map) {
  std::error_code ec;
  if (std::filesystem::exists(folder / "model.safetensors", ec)) return {folder / "model.safetensors"};
  const std::filesystem::path index = folder / "model.safetensors.index.json";
  std::ifstream in(index);
  if (!in)
    throw support::SafetensorsError(fmt::format("{}: no model.safetensors or model.safetensors.index.json (bertc reads "
                                                "safetensors, not pytorch_model.bin: save the model with "
                                                "save_pretrained(DIR, safe_serialization=True))",
                                                folder.string()));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw support::SafetensorsError(fmt::format("{}: not JSON: {}", index.string(), e.what()));
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw support::SafetensorsError(fmt::format("{}: no \"weight_map\" object (tensor name -> shard file)", index.string()));
  std::vector<std::filesystem::path> files;
  for (const auto& [name, file] : j["weight_map"].items()) {
    const std::string file_name = file.is_string() ? file.get<std::string>() : std::string();
    if (!file.is_string() || file_name.empty() || file_name == "." || file_name == ".." ||
        file_name.find('/') != std::string::npos)
      throw support::SafetensorsError(fmt::format("{}: weight_map[\"{}\"] must name a file of the folder, found {}",
                                                  index.string(), name, file.dump()));
    const std::filesystem::path path = folder / file.get<std::string>();
    if (std::find(files.begin(), files.end(), path) == files.end()) files.push_back(path);
    if (weight_map) (*weight_map)[name] = file_name;
  }
  if (files.empty()) throw support::SafetensorsError(fmt::format("{}: the weight_map names no file", index.string()));
  return files;
}

namespace {

// Old TensorFlow conversions name layer norms' params gamma and beta.
std::string modern_name(const std::string& name) {
  if (name.ends_with(".gamma")) return name.substr(0, name.size() - 6) + ".weight";
  if (name.ends_with(".beta")) return name.substr(0, name.size() - 5) + ".bias";
  return name;
}

// Weights that record their model (a folder's config.json, a checkpoint's model record: what the
// model was built from) and hold layers past it are of a deeper model than their record says (an
// edited or replaced config.json): refused, where the layers past it were dropped without a word.
// Weights without a record may be a deeper model's on purpose (its first layers to start from).
void refuse_layers_past_the_record(const std::filesystem::path& path, const PretrainedReport& report,
                                   const std::map<std::string, ir::TensorType>& params) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec) && !report.metadata.count("model_config")) return;
  // (a BertModel file's names lack "bert.": those of layers the model has not keep it off)
  const std::regex layer(R"(^(?:bert\.)?encoder\.layer\.(\d{1,9})\.)");
  auto layer_of = [&](const std::string& name) -> std::optional<int64_t> {
    std::smatch m;
    if (!std::regex_search(name, m, layer)) return std::nullopt;
    return std::stoll(m[1]);
  };
  int64_t layers = 0;
  for (const auto& [name, type] : params)
    if (const auto l = layer_of(name)) layers = std::max(layers, *l + 1);
  std::vector<std::string> past;
  int64_t deepest = 0;
  for (const std::string& name : report.unexpected)
    if (const auto l = layer_of(name); l && *l >= layers) past.push_back(name), deepest = std::max(deepest, *l);
  if (past.empty()) return;
  const bool folder = std::filesystem::is_directory(path, ec);
  throw support::SafetensorsError(fmt::format(
      "{}: holds {} tensors of layers past the {} layer(s) its {} gives the model (up to layer {}: '{}'...): the "
      "record and the weights are of different models, and the layers past it would be dropped without a word; "
      "restore {} (num_hidden_layers = {} for these weights)",
      path.string(), past.size(), layers, folder ? "config.json" : "model record", deepest, past.front(),
      folder ? "the folder's config.json" : "the checkpoint as it was written", deepest + 1));
}

}  // namespace

std::vector<std::string> init_notes(const PretrainedReport& r) {
  // (a few names, then how many more: a checkpoint's whole optimizer state made one line of
  // dozens of names)
  auto some = [](const std::vector<std::string>& names) {
    constexpr size_t kShown = 6;
    const std::vector<std::string> shown(names.begin(), names.begin() + std::min(names.size(), kShown));
    return fmt::format("{}{}", fmt::join(shown, ", "),
                       names.size() > kShown ? fmt::format(" and {} more", names.size() - kShown) : "");
  };
  std::vector<std::string> notes;
  if (!r.missing.empty())
    notes.push_back(fmt::format("init: {} params not in the file, initialized fresh: {}", r.missing.size(), some(r.missing)));
  // (a fine-tuned checkpoint's task head is no optimizer state: said apart)
  std::vector<std::string> head, rest;
  for (const std::string& n : r.unexpected) (n == "classifier.weight" || n == "classifier.bias" ? head : rest).push_back(n);
  if (!head.empty())
    notes.push_back(fmt::format("init: {} tensors of the file are a task head this model has not ({}: a fine-tuned "
                                "model's), ignored",
                                head.size(), some(head)));
  if (!rest.empty())
    notes.push_back(fmt::format("init: {} tensors of the file are not params of this model, ignored{}: {}", rest.size(),
                                is_checkpoint_record(r.metadata) ? " (a checkpoint's optimizer state: --init takes its weights)"
                                                                 : "",
                                some(rest)));
  return notes;
}

PretrainedReport load_pretrained(const std::filesystem::path& path, const ir::Graph& graph, support::Environment& env,
                                 const std::vector<std::string>& fresh) {
  std::error_code ec;
  std::map<std::string, std::string> weight_map;  // (an index's: tensor -> the shard it says holds it)
  const std::vector<std::filesystem::path> files = std::filesystem::is_directory(path, ec)
                                                       ? hf_weight_files(path, &weight_map)
                                                       : std::vector<std::filesystem::path>{path};
  std::map<std::string, std::string> held;  // tensor -> the shard that holds it
  PretrainedReport report;
  std::map<std::string, ir::TensorType> params;
  for (ir::ValueId p : graph.values_of(ir::OpKind::Param)) params[graph.value(p).name] = graph.value(p).type;
  std::vector<std::string> misshaped;
  for (const std::filesystem::path& file_path : files) {
    const support::Safetensors file = support::read_safetensors(file_path);
    verify_checksums(file, file_path.string());  // (bertc's own files; others have none)
    // bertc's other safetensors files (eval's gradients and logits, a batch) hold no weights, some
    // under the params' own names: gradients would load as weights without a word.
    if (const auto format = file.metadata.find("format");
        format != file.metadata.end() && format->second.starts_with("bertc-") &&
        !format->second.starts_with("bertc-checkpoint"))
      throw support::SafetensorsError(fmt::format("{}: a {} file (format {}), not weights: give a checkpoint (bertc train or "
                                   "finetune) or a Hugging Face folder",
                                   file_path.string(), format->second.substr(6), format->second));
    if (file_path == files.front()) report.metadata = file.metadata;
    for (const auto& [stored_name, stored] : file.tensors) {
      held[stored_name] = file_path.filename().string();
      const std::string file_name = modern_name(stored_name);
      // A BertModel file names its tensors without the "bert." of BertForPreTraining.
      const std::string name = !params.count(file_name) && params.count("bert." + file_name) ? "bert." + file_name
                                                                                             : file_name;
      if (std::any_of(fresh.begin(), fresh.end(), [&](const std::string& p) { return name.starts_with(p); })) {
        report.set_aside.push_back(name);
        continue;
      }
      auto it = params.find(name);
      if (it == params.end()) {
        // The tied decoder (same storage as the word embeddings and cls.predictions.bias) and the
        // position_ids buffer are in Hugging Face files but are no params.
        const bool known_extra = name.starts_with("cls.predictions.decoder.") || name.ends_with("position_ids");
        if (!known_extra) report.unexpected.push_back(name);
        continue;
      }
      if (stored.shape != it->second.shape) {
        misshaped.push_back(fmt::format("{} (file {}, model {})", name, ir::shape_string(stored.shape),
                                        ir::shape_string(it->second.shape)));
        continue;
      }
      if (std::count(report.loaded.begin(), report.loaded.end(), name))
        throw support::SafetensorsError(fmt::format("{}: param '{}' comes twice from {} (two shards, or two names of "
                                                    "it such as LayerNorm gamma and weight): keep one",
                                                    file_path.string(), name, path.string()));
      env[name] = support::to_host(stored, it->second.dtype, fmt::format("{}: tensor '{}'", file_path.string(), name));
      check_finite(name, env[name], file_path.string());
      report.loaded.push_back(name);
    }
  }
  // The index is the folder's table of contents: an entry no shard bears out means it belongs to
  // another save (shards replaced or lost), and what loads is not what was saved.
  for (const auto& [name, shard] : weight_map) {
    const auto it = held.find(name);
    if (it == held.end())
      throw support::SafetensorsError(fmt::format("{}: model.safetensors.index.json puts tensor '{}' in {}, and no "
                                                  "shard of the folder holds it: the index and the shards are of "
                                                  "different saves (save the model again, or copy the folder whole)",
                                                  path.string(), name, shard));
    if (it->second != shard)
      throw support::SafetensorsError(fmt::format("{}: model.safetensors.index.json puts tensor '{}' in {}, and it is in "
                                                  "{}: the index and the shards are of different saves (save the "
                                                  "model again, or copy the folder whole)",
                                                  path.string(), name, shard, it->second));
  }
  if (!misshaped.empty())
    throw support::SafetensorsError(fmt::format("{}: {} tensors have another shape than the model's: {} (does the config "
                                       "match the checkpoint's?)",
                                       path.string(), misshaped.size(), fmt::join(misshaped, "; ")));
  for (const auto& [name, type] : params)
    if (!std::count(report.loaded.begin(), report.loaded.end(), name)) report.missing.push_back(name);
  refuse_layers_past_the_record(path, report, params);
  return report;
}

}  // namespace bertc::run_folder
