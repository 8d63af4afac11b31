// Training checkpoints: parameters under their Hugging Face names plus optimizer moments, in one
// safetensors file per saved step, written atomically; and loading a Hugging Face checkpoint to
// start from.
#pragma once

#include <filesystem>
#include <optional>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "support/safetensors.h"
#include "support/tensor_io.h"

namespace bertc::run_folder {

// The checkpoint metadata key naming the run that wrote it (new_run_id, run_folder/progress.h).
inline constexpr const char* kRunIdKey = "run";

struct CheckpointFile {
  std::filesystem::path path;
  int64_t step = 0;
};

// dir/checkpoint-000042.safetensors
std::filesystem::path checkpoint_path(const std::filesystem::path& dir, int64_t step);
// The checkpoints in `dir`, oldest first (half-written temporaries are not among them).
std::vector<CheckpointFile> list_checkpoints(const std::filesystem::path& dir);
// Whether a safetensors file's record is a bertc checkpoint's (its format "bertc-checkpoint-N").
bool is_checkpoint_record(const std::map<std::string, std::string>& metadata);
// The newest of `files` (list_checkpoints's, oldest first) whose record is a checkpoint's; each
// newer one that is not (cut short, or another kind under a checkpoint's name) is added to
// `not_checkpoints` as "NAME (format F)" or "NAME (unreadable as safetensors: ...)".
std::optional<CheckpointFile> newest_checkpoint(const std::vector<CheckpointFile>& files,
                                                std::vector<std::string>& not_checkpoints);

// Throws std::invalid_argument when `path` is a run folder (checkpoints, no config.json) given where weights
// are read (`option`: "--init", "export"), naming its newest checkpoint and its best/ one to give
// instead (a run folder was said as "a folder without config.json", or CLI11's "File is actually
// a directory").
void refuse_run_folder_as_weights(const std::filesystem::path& path, const std::string& option);
// The step a file name says it is a checkpoint of (checkpoint-NNNNNN.safetensors), or nullopt:
// what list_checkpoints and --resume take for one.
std::optional<int64_t> checkpoint_step_of(const std::string& file_name);

// What a checkpoint must hold: name -> type, for every param and every optimizer state.
using TensorManifest = std::map<std::string, ir::TensorType>;

// Whether a checkpoint tensor is optimizer state (moments, the step count, the loss scale) or the
// exchange's, not a param: what --init and export leave out.
bool is_optimizer_state(const std::string& name);

// Tensors of the data-parallel gradient exchange's state (PowerSGD's), kept beside the manifest's:
// a checkpoint may hold them or not, whatever the model.
inline constexpr const char* kExchangeStatePrefix = "dist.";

// Saves the manifest's tensors from env, and `exchange` (named kExchangeStatePrefix...), with
// `metadata` plus "step" and an xxh3 checksum of every tensor and of the metadata; reads the file
// back and checks it, then deletes all but the newest `keep` checkpoints of its run (those whose
// kRunIdKey is `metadata`'s: another run's in the folder are its only weights, and stay; without
// one, of the folder). A failed
// write throws naming its fix and then how the run goes on: `again` when given (a command that
// does not resume: fine-tuning), else the same command, with --resume once a checkpoint is kept.
// `room_for`: how many checkpoints of this size the way on (`again`) needs room for, which a full
// disk's advice asks for (a fine-tuning run started again keeps several, and its best).
void save_checkpoint(const std::filesystem::path& dir, int64_t step, const TensorManifest& manifest,
                     const support::Environment& env, std::map<std::string, std::string> metadata, int64_t keep,
                     const support::Environment& exchange = {}, const std::string& again = "", int64_t room_for = 1);

struct CheckpointContents {
  int64_t step = 0;
  std::map<std::string, std::string> metadata;
};
// Loads every manifest tensor into env, and the exchange's state tensors there are (as stored).
// Refuses (support::SafetensorsError naming the file and the tensor) a corrupt or truncated file,
// a tensor or metadata that does not match its checksum, a missing, extra or mis-shaped tensor, a
// weight that is NaN or infinite, a step below 1.
CheckpointContents load_checkpoint(const std::filesystem::path& path, const TensorManifest& manifest, support::Environment& env);

// Throws SafetensorsError naming the tensor when a file written by save_checkpoint no longer
// matches its checksums; a file without checksums (another program's, an older bertc's) passes.
void verify_checksums(const support::Safetensors& file, const std::string& where);
// Throws SafetensorsError naming the tensor and element when a weight is NaN or infinite.
void check_finite(const std::string& name, const support::HostTensor& tensor, const std::string& where);

struct PretrainedReport {
  std::vector<std::string> loaded, missing, unexpected;
  std::vector<std::string> set_aside;  // the file's tensors under a `fresh` prefix: held, not loaded
  std::map<std::string, std::string> metadata;  // the (first) file's: a bertc checkpoint's record of its run
};
// The safetensors files of a Hugging Face model folder: model.safetensors, or the shards its
// model.safetensors.index.json maps tensors to (`weight_map`, when given, gets that map: tensor ->
// shard file name). Throws SafetensorsError naming the folder and the fix when it has neither (a
// pytorch_model.bin only, say).
std::vector<std::filesystem::path> hf_weight_files(const std::filesystem::path& folder,
                                                   std::map<std::string, std::string>* weight_map = nullptr);

// Loads params from a Hugging Face BertForPreTraining (or BertModel, BertFor...Classification)
// safetensors file, a bertc checkpoint, or a Hugging Face model folder (hf_weight_files): tensors
// are matched by name (a BertModel file's names gain the "bert." prefix; old conversions'
// LayerNorm gamma/beta are weight/bias) and converted to f32; tied or buffer entries
// (cls.predictions.decoder.*, *.position_ids) are skipped; a param of another shape is an error
// listing them all, a tensor in two shards an error. Missing params stay unset (to be initialized
// fresh) and are reported, as are unexpected names.
// Tensors whose names start with one of `fresh` are not loaded (reported missing, and those the
// file held as set aside): a fine-tuning run's task head, made fresh whatever the file holds.
// A file's weights of a deeper model than the folder's config.json or the checkpoint's model record
// says (layers past the model's) are refused as record and weights of different models.
PretrainedReport load_pretrained(const std::filesystem::path& path, const ir::Graph& graph, support::Environment& env,
                                 const std::vector<std::string>& fresh = {});

// What a run says of what --init left (lines "init: ..."): params it had not (initialized fresh),
// a task head this model has not, and other tensors ignored (a checkpoint's optimizer state said so).
std::vector<std::string> init_notes(const PretrainedReport& report);

}  // namespace bertc::run_folder
