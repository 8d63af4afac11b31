// Checkpoint files: naming, listing, saving with pruning, strict loading, pretrained loading.
#include "train/checkpoint.h"

#include <algorithm>
#include <regex>

#include <fmt/format.h>

#include "support/safetensors.h"

namespace bertc::train {

std::filesystem::path checkpoint_path(const std::filesystem::path& dir, int64_t step) {
  return dir / fmt::format("checkpoint-{:06d}.safetensors", step);
}

std::vector<CheckpointFile> list_checkpoints(const std::filesystem::path& dir) {
  std::vector<CheckpointFile> out;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return out;
  static const std::regex name(R"(checkpoint-(\d+)\.safetensors)");
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::smatch m;
    const std::string file = entry.path().filename().string();
    if (std::regex_match(file, m, name)) out.push_back({entry.path(), std::stoll(m[1])});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
  return out;
}

void save_checkpoint(const std::filesystem::path& dir, int64_t step, const TensorManifest& manifest,
                     const support::Environment& env, std::map<std::string, std::string> metadata, int64_t keep,
                     const support::Environment& exchange) {
  std::filesystem::create_directories(dir);
  support::Safetensors file;
  for (const auto& [name, type] : manifest) file.tensors[name] = support::to_stored(env.at(name));
  for (const auto& [name, tensor] : exchange) {
    if (!name.starts_with(kExchangeStatePrefix) || manifest.count(name))
      throw std::logic_error(fmt::format("exchange state '{}' is not named {}*", name, kExchangeStatePrefix));
    file.tensors[name] = support::to_stored(tensor);
  }
  metadata["format"] = "bertc-checkpoint-1";
  metadata["step"] = std::to_string(step);
  file.metadata = std::move(metadata);
  support::write_safetensors(checkpoint_path(dir, step), file);
  // Only now that the new checkpoint is durable may older ones go, with temporaries a killed
  // run left behind (one training run writes to a folder at a time).
  auto all = list_checkpoints(dir);
  for (size_t i = 0; i + keep < all.size(); ++i) std::filesystem::remove(all[i].path);
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string file = entry.path().filename().string();
    if (file.starts_with(".checkpoint-") && file.find(".safetensors.tmp.") != std::string::npos)
      std::filesystem::remove(entry.path());
  }
}

CheckpointContents load_checkpoint(const std::filesystem::path& path, const TensorManifest& manifest, support::Environment& env) {
  const support::Safetensors file = support::read_safetensors(path);
  const std::string where = path.string();
  auto meta = [&](const std::string& key) {
    auto it = file.metadata.find(key);
    if (it == file.metadata.end())
      throw support::SafetensorsError(fmt::format("{}: no '{}' in its metadata: not a bertc checkpoint", where, key));
    return it->second;
  };
  if (meta("format") != "bertc-checkpoint-1")
    throw support::SafetensorsError(fmt::format("{}: format '{}' is not bertc-checkpoint-1", where, meta("format")));
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
  }
  try {
    return {std::stoll(meta("step")), file.metadata};
  } catch (const std::logic_error&) {
    throw support::SafetensorsError(fmt::format("{}: metadata step '{}' is not a number", where, meta("step")));
  }
}

PretrainedReport load_pretrained(const std::filesystem::path& path, const ir::Graph& graph, support::Environment& env) {
  const support::Safetensors file = support::read_safetensors(path);
  PretrainedReport report;
  std::map<std::string, ir::TensorType> params;
  for (ir::ValueId p : graph.values_of(ir::OpKind::Param)) params[graph.value(p).name] = graph.value(p).type;
  std::vector<std::string> misshaped;
  for (const auto& [file_name, stored] : file.tensors) {
    // A BertModel file names its tensors without the "bert." of BertForPreTraining.
    const std::string name = !params.count(file_name) && params.count("bert." + file_name) ? "bert." + file_name
                                                                                           : file_name;
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
    env[name] = support::to_host(stored, it->second.dtype, fmt::format("{}: tensor '{}'", path.string(), name));
    report.loaded.push_back(name);
  }
  if (!misshaped.empty())
    throw support::SafetensorsError(fmt::format("{}: {} tensors have another shape than the model's: {} (does the config "
                                       "match the checkpoint's?)",
                                       path.string(), misshaped.size(), fmt::join(misshaped, "; ")));
  for (const auto& [name, type] : params)
    if (!std::count(report.loaded.begin(), report.loaded.end(), name)) report.missing.push_back(name);
  return report;
}

}  // namespace bertc::train
