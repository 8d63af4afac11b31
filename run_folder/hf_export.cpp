// A checkpoint as a Hugging Face folder (see hf_export.h).
#include "run_folder/hf_export.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include <fmt/format.h>
#include <xxhash.h>

#include "data/text_check.h"
#include "data/vocab_identity.h"
#include "support/atomic_file.h"
#include "support/file_errors.h"
#include "support/safetensors.h"
#include "run_folder/checkpoint.h"
#include "run_folder/records.h"
#include "run_folder/train_error.h"
#include "run_config/config.h"

namespace bertc::run_folder {
namespace {

using run_config::HfHead;

frontend::ModelConfig model_config_of(const std::map<std::string, std::string>& meta,
                                      const std::filesystem::path& checkpoint) {
  const auto format = meta.find("format");
  if (!is_checkpoint_record(meta))
    throw TrainError(fmt::format("{}: not a bertc checkpoint (format '{}'{}): export takes a checkpoint of bertc train "
                                 "or bertc finetune",
                                 checkpoint.string(), format == meta.end() ? "" : format->second,
                                 format != meta.end() && format->second == "pt" ? ": Hugging Face weights already" : ""));
  const std::optional<frontend::ModelConfig> model = run_config::model_of_record(meta, checkpoint.string());
  if (!model)
    throw TrainError(fmt::format("{}: the checkpoint does not record its model (a bertc from before export): export a "
                                 "checkpoint this bertc wrote (pretraining: resume for a step; fine-tuning: run again)",
                                 checkpoint.string()));
  return *model;
}

// The head a checkpoint holds: a fine-tuned one's task, else pretraining's.
HfHead own_head(const std::map<std::string, std::string>& meta) {
  const auto task = meta.find("finetune_task");
  if (task == meta.end()) return HfHead::Pretraining;
  return ir::enum_named<frontend::FinetuneTask>(task->second) == frontend::FinetuneTask::TokenClassification
             ? HfHead::TokenClassification
             : HfHead::SequenceClassification;
}

// The params the folder holds under Hugging Face's names (a BertModel's without "bert.").
support::Safetensors params_for(const support::Safetensors& checkpoint, HfHead head) {
  support::Safetensors out;
  out.metadata["format"] = "pt";  // (transformers refuses safetensors without it)
  for (const auto& [name, tensor] : checkpoint.tensors) {
    if (is_optimizer_state(name)) continue;
    if (head == HfHead::Base) {
      if (name.starts_with("bert.")) out.tensors[name.substr(5)] = tensor;
      continue;
    }
    out.tensors[name] = tensor;
  }
  return out;
}

// The vocabulary's text (a token a line): --vocab's, or the file the checkpoint recorded; refused
// when it is not the one the checkpoint records (data/vocab_identity.h), or, for a checkpoint
// recording none, when it has more tokens than the model's embeddings have rows.
struct ExportedVocab {
  std::string text;
  data::VocabRecord record;
};
ExportedVocab vocabulary(const ExportOptions& o, const std::map<std::string, std::string>& meta, int64_t vocab_size) {
  const std::optional<data::VocabRecord> recorded = data::vocab_from_metadata(meta);
  const auto recorded_path = meta.find("vocab");
  if (!o.vocab && recorded_path == meta.end())
    throw TrainError(fmt::format("{}: the checkpoint records no vocabulary file (its run read none, or an older bertc "
                                 "wrote it): give the vocabulary with --vocab FILE",
                                 o.checkpoint.string()));
  const std::filesystem::path path = o.vocab ? *o.vocab : std::filesystem::path(recorded_path->second);
  // (said here: the vocabulary loader's advice names [train] vocab, and export reads no config)
  if (std::error_code ec; !std::filesystem::exists(path, ec)) {
    // (a path too long to open is there all the same: recorded from a folder that deep, it is
    // said so, and reached by a shorter path)
    if (ec.value() == ENAMETOOLONG)
      throw TrainError(fmt::format("{}...: the vocabulary's path{} cannot be opened: it has {} bytes, more than a "
                                   "path may have; give the vocabulary with --vocab FILE by a shorter path (relative "
                                   "to a folder nearer it)",
                                   path.string().substr(0, 60),
                                   o.vocab ? "" : fmt::format(" ({} records it)", o.checkpoint.string()),
                                   path.string().size()));
    throw TrainError(fmt::format("{}: no such vocabulary file{}: give the vocabulary with --vocab FILE", path.string(),
                                 o.vocab ? "" : fmt::format(" (the one {} was trained with)", o.checkpoint.string())));
  }
  data::Vocab vocab = [&] {
    try {
      return data::Vocab::load(path);
    } catch (const data::DataError& e) {
      throw TrainError(fmt::format("{}{}", e.what(),
                                   o.vocab ? "" : fmt::format(" (the vocabulary {} was trained with: give it with "
                                                              "--vocab FILE)",
                                                              o.checkpoint.string())));
    }
  }();
  if (recorded) {
    data::require_same_vocab(vocab, *recorded, fmt::format("checkpoint {}", o.checkpoint.string()),
                             o.vocab ? "give the vocabulary it was trained with (--vocab FILE)"
                                     : "the file changed since: give the vocabulary it was trained with (--vocab FILE)");
  } else if (vocab.size() > vocab_size) {
    throw TrainError(fmt::format("{} has {} tokens, and the model's embeddings have {} rows: it is not the vocabulary "
                                 "{} was trained with; give that one (--vocab FILE)",
                                 path.string(), vocab.size(), vocab_size, o.checkpoint.string()));
  }
  ExportedVocab out{"", data::record_of(vocab)};
  for (int64_t i = 0; i < vocab.size(); ++i) out.text += vocab.token(i) + "\n";
  // (absolute, as checkpoints record theirs: from another folder a relative one named another file)
  std::error_code ec;
  const std::filesystem::path file = o.output / "vocab.txt";
  const std::filesystem::path absolute = std::filesystem::absolute(file, ec);
  out.record.path = (ec ? file : absolute.lexically_normal()).string();
  return out;
}

nlohmann::json tokenizer_config(bool lower_case, int64_t max_length) {
  return {{"tokenizer_class", "BertTokenizer"}, {"do_lower_case", lower_case},   {"model_max_length", max_length},
          {"unk_token", "[UNK]"},                {"sep_token", "[SEP]"},          {"pad_token", "[PAD]"},
          {"cls_token", "[CLS]"},                {"mask_token", "[MASK]"},        {"tokenize_chinese_chars", true},
          {"strip_accents", nullptr}};
}

}  // namespace

namespace {

// A file an export writes into its folder, or the temporary of one (.NAME.tmp.PID).
bool is_export_file(const std::string& name) {
  for (const char* file : {"config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json",
                           "special_tokens_map.json"})
    if (name == file || name.starts_with(fmt::format(".{}.tmp.", file))) return true;
  return false;
}

// Removes the part-made copies (.NAME.tmp.PID) beside `output` and inside it of exports on this
// machine whose process is gone (a second signal, a kill), saying so: nothing else would.
void sweep_dead_staging(const std::filesystem::path& output, std::ostream& log) {
  const std::string prefix = support::temporary_beside(output).filename().string();
  const std::string stem = prefix.substr(0, prefix.rfind('.') + 1);  // ".NAME.tmp."
  std::error_code ec;
  const std::filesystem::path beside = output.parent_path().empty() ? "." : output.parent_path();
  for (const std::filesystem::path& folder : {beside, output}) {
    for (const auto& e : std::filesystem::directory_iterator(folder, ec)) {
      const std::string name = e.path().filename().string();
      if (!name.starts_with(stem) || e.is_symlink(ec) || !e.is_directory(ec)) continue;  // (it makes no links)
      char* end = nullptr;
      const long pid = std::strtol(name.c_str() + stem.size(), &end, 10);
      if (*end || pid <= 0 || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
      // (only a folder of what an export writes: one holding anything else is not its copy)
      support::remove_left_folder(e.path(), is_export_file, "bertc export");
      log << fmt::format("export: removed {}, the part-made copy of an export that ended at once\n", e.path().string());
    }
  }
}

}  // namespace

void export_hf_folder(const ExportOptions& options, std::ostream& log) {
  ExportOptions o = options;
  // "my-model/" names the folder my-model (its staging folder goes beside it, not inside).
  o.output = o.output.lexically_normal();
  if (o.output.filename().empty()) o.output = o.output.parent_path();
  std::error_code ec;
  sweep_dead_staging(o.output, log);  // (one inside an empty folder given again would make it not empty)
  if (std::filesystem::exists(o.output, ec) &&
      (!std::filesystem::is_directory(o.output, ec) || !std::filesystem::is_empty(o.output, ec)))
    throw TrainError(fmt::format("{} exists and is not an empty folder: give a new folder (nothing is overwritten)",
                                 o.output.string()));
  // model.safetensors records where the folder's vocab.txt is, as text (JSON).
  data::TextFigures name;
  name.add_line(o.output.string());
  if (name.not_text > 0)
    throw TrainError(fmt::format("{}: the folder's name is not UTF-8 text (or holds control characters), and "
                                 "model.safetensors records the path of its vocab.txt as text: give a name in UTF-8",
                                 o.output.string()));
  const support::Safetensors checkpoint = support::read_safetensors(o.checkpoint);
  verify_checksums(checkpoint, o.checkpoint.string());
  const std::map<std::string, std::string>& meta = checkpoint.metadata;
  if (const auto model = meta.find("model"); model != meta.end() && model->second != "bert")
    throw TrainError(fmt::format("{}: a checkpoint of model '{}', whose layers Hugging Face's BERT does not have: "
                                 "export writes BERT folders",
                                 o.checkpoint.string(), model->second));
  const frontend::ModelConfig model = model_config_of(meta, o.checkpoint);
  // (every record checked before own_head reads the task and config.json is written from the head)
  const auto classifier = checkpoint.tensors.find("classifier.weight");
  const std::optional<ir::Shape> classifier_shape =
      classifier == checkpoint.tensors.end() ? std::nullopt : std::optional<ir::Shape>(classifier->second.shape);
  check_checkpoint_record(meta, classifier_shape, o.checkpoint.string());
  const FineTunedHead exported = fine_tuned_head(meta, classifier_shape, o.checkpoint.string());
  const HfHead own = own_head(meta);
  const HfHead head = o.head.value_or(own);
  // (--for base is offered only where it works: a token-classification model has no pooler)
  if (head != own && head != HfHead::Base)
    throw TrainError(fmt::format("{} holds a {} model; --for {} needs that head's weights: export it --for {}{}",
                                 o.checkpoint.string(), ir::enum_name(own), ir::enum_name(head), ir::enum_name(own),
                                 own == HfHead::TokenClassification ? "" : " or --for base (the encoder only)"));
  if (head == HfHead::Base && own == HfHead::TokenClassification)
    throw TrainError(fmt::format("{}: a token-classification model has no pooler, and a BertModel folder has one "
                                 "(transformers would make it up at random): export it --for token-classification",
                                 o.checkpoint.string()));
  const bool regression = exported.regression;
  const int64_t num_labels = exported.num_labels;
  const std::vector<std::string>& labels = exported.labels;
  support::Safetensors params = params_for(checkpoint, head);
  const ExportedVocab vocab = vocabulary(o, meta, model.vocab_size);
  // The vocabulary the weights are of, in their metadata (transformers reads only "format"): an
  // --init of the folder checks its vocab.txt against it.
  params.metadata.merge(data::vocab_metadata(vocab.record));
  const bool lower = support::metadata_flag(meta, "do_lower_case", o.checkpoint.string()).value_or(true);

  // The folder is made beside its place and renamed there whole, or, when the folder is there
  // (empty), made inside it and its files moved up: a failed export leaves nothing half-written
  // under the name, and the user's folder (its mode, owner, a mount point) is kept.
  const std::filesystem::path staging = support::staging_folder_for(o.output);
  // The folders on the way that are not there yet: a failed export removes them too.
  const auto missing = support::missing_folders(staging.parent_path());
  auto stop_if_asked = [&] {
    if (const int signal = o.stop_requested ? o.stop_requested() : 0) throw ExportStopped(signal);
  };
  try {
    std::filesystem::create_directories(staging);
    stop_if_asked();
    support::write_safetensors(staging / "model.safetensors", params);
    stop_if_asked();
    support::write_file_atomically(staging / "config.json",
                                   run_config::hf_config_json(model, head, num_labels, regression, labels).dump(2) + "\n");
    stop_if_asked();
    support::write_file_atomically(staging / "vocab.txt", vocab.text);
    stop_if_asked();
    support::write_file_atomically(staging / "tokenizer_config.json",
                                   tokenizer_config(lower, model.max_position_embeddings).dump(2) + "\n");
    const nlohmann::json special = {{"unk_token", "[UNK]"}, {"sep_token", "[SEP]"}, {"pad_token", "[PAD]"},
                                    {"cls_token", "[CLS]"}, {"mask_token", "[MASK]"}};
    stop_if_asked();
    support::write_file_atomically(staging / "special_tokens_map.json", special.dump(2) + "\n");
    stop_if_asked();
    // (rename() replaces only an empty folder: one another export filled meanwhile is kept)
    if (!support::place_folder(staging, o.output))
      throw TrainError(fmt::format("{}: something was written there while this export ran (another export to the "
                                   "same folder?): it is kept as it is, and this export is not written; check what "
                                   "it holds, and export again to a new folder if it is not what you want",
                                   o.output.string()));
  } catch (const support::FileError& e) {
    uint64_t written = 0;  // (the room the export needs: the files before this one, and this one)
    for (const auto& entry : std::filesystem::directory_iterator(staging, ec))
      if (entry.is_regular_file(ec) && entry.path() != e.path()) written += entry.file_size(ec);
    std::filesystem::remove_all(staging, ec);
    support::remove_made_folders(missing);
    // Said of the folder asked for (its fix: room or permission where that goes), not of the
    // staging copy, which is gone.
    if (e.path() == o.output) throw;  // (placing the folder: already said of it)
    throw support::FileError(e.code().value(), o.output,
                             fmt::format("cannot write {} of {} (made {} first, and removed)",
                                         e.path().filename().string(), o.output.string(),
                                         staging.parent_path() == o.output ? "in a hidden folder inside it" : "beside it"),
                             e.needed() ? written + e.needed() : 0);
  } catch (...) {
    std::filesystem::remove_all(staging, ec);
    support::remove_made_folders(missing);
    throw;
  }
  log << fmt::format("export: {} -> {}: {} ({} params, no optimizer state), config.json, vocab.txt ({} tokens, xxh3 "
                     "{}), tokenizer_config.json, special_tokens_map.json\n",
                     o.checkpoint.string(), o.output.string(), run_config::hf_config_json(model, head, num_labels, regression,
                                                                                    labels)["architectures"][0].get<std::string>(),
                     params.tensors.size(), vocab.record.tokens, vocab.record.xxh3);
}

}  // namespace bertc::run_folder
