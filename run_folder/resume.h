// Where a run starts: from the newest checkpoint of its folder (--resume), refusing one made with
// other settings, or fresh (optionally from Hugging Face weights, --init), never over an existing
// run; and what a checkpoint of a program holds.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <string>

#include "data/pretraining_data.h"
#include "data/vocab.h"
#include "frontend/model.h"
#include "passes/pipeline.h"
#include "run_config/config.h"
#include "support/tensor_io.h"
#include "run_folder/checkpoint.h"
#include "run_folder/records.h"

namespace bertc::run_folder {

// Params and optimizer moments: what a checkpoint holds (accumulators are zero between steps).
TensorManifest manifest_of(const passes::TrainingProgram& program);

// The run facts a resumed run must share with its checkpoint to continue the same data stream:
// the global batch (ranks x batch_size x gradient_accumulation_steps), not how it is split.
std::map<std::string, std::string> run_metadata(const frontend::ModelDefinition& model, const run_config::Config& config,
                                                int ranks);

// What bertc export needs to write a Hugging Face folder from a checkpoint alone: the model as
// config.json keys ("model_config"), the vocabulary (data/vocab_identity.h: "vocab", its absolute
// path, "vocab_xxh3", "vocab_tokens": export, resume and --init refuse another) and
// "do_lower_case".
std::map<std::string, std::string> export_metadata(const run_config::Config& config, const data::Vocab& vocab);

// A Hugging Face folder's vocab.txt, refused (require_same_vocab) when its weights record another
// (bertc export records the vocabulary it wrote): the folder's file was edited since.
data::Vocab hf_folder_vocab(const std::filesystem::path& folder, const std::map<std::string, std::string>& metadata);

// What the weights at `init` record of their text's lower-casing: a checkpoint's metadata
// (`metadata`), or a Hugging Face folder's tokenizer_config.json; nothing where neither says.
std::optional<bool> weights_lower_case(const std::filesystem::path& init, const std::map<std::string, std::string>& metadata);

// Says where the run's do_lower_case came from when --init's weights decided it (the config sets
// none: a checkpoint's record, a Hugging Face folder's tokenizer_config.json or BERT's default),
// before the text is read with it; and warns where a folder's tokenizer_config.json keeps accents
// that bertc's tokenizer strips, or the other way (it strips them exactly where it lower-cases).
void say_init_lower_case(const run_config::Config& c, const std::optional<std::filesystem::path>& init,
                         std::ostream& log);

// Refuses --init weights made with another vocabulary than the run's `vocab`: a Hugging Face
// folder's vocab.txt, or what a bertc checkpoint records in `metadata`; says on `log` when the
// file records none (a Hugging Face weights file alone).
// `choose`: how the command's user chooses the vocabulary ("--vocab FILE, or [train] vocab"). Says
// on `log` when the weights were trained with another do_lower_case than the run's `lower_case`
// (the same vocabulary then makes other tokens of the same text).
void check_init_vocab(const std::filesystem::path& init, const std::map<std::string, std::string>& metadata,
                      const data::Vocab& vocab, bool lower_case, std::ostream& log, const std::string& choose);

// The settings a resumed run must keep (the model, the data's making, the schedule, the optimizer),
// as "config_settings" (their text) and "config_hash" (its xxh3); prepare_state refuses a resume
// whose settings differ, naming each key that does.
std::map<std::string, std::string> settings_metadata(const run_config::Config& config);

// Fresh params (from the seed) and zero states, as a run starting anew has.
void fresh_state(const run_config::Config& config, const passes::TrainingProgram& program, support::Environment& env);

// Throws TrainError when a checkpoint's record `saved` holds another global batch than `now`
// (batch_size x gradient_accumulation_steps x ranks), naming both and the split it was trained with.
void refuse_other_global_batch(const std::map<std::string, std::string>& saved, const std::string& now,
                               const std::filesystem::path& checkpoint);

// The checkpoints of --resume's run folder, oldest first. Throws TrainError for a folder without
// one, saying how to start fresh.
std::vector<CheckpointFile> resumable_checkpoints(const std::filesystem::path& dir);

// The checkpoint a run resumes from, once its state is loaded.
struct ResumedFrom {
  std::filesystem::path path;
  std::map<std::string, std::string> metadata;
};

// The run a checkpoint's metadata names (kRunIdKey): nullopt for a checkpoint of a bertc before
// runs were named.
std::optional<std::string> recorded_run_id(const std::map<std::string, std::string>& metadata);
// The run a resume from a checkpoint continues: the one it names, else an id derived from its
// record (16 hexadecimal digits of its xxh3), the same at every resume from it, so that the
// lines and checkpoints written since are one run's and another run's are told apart from them.
std::string resumed_run_id(const std::map<std::string, std::string>& metadata);

// What prepare_state reads of a run's options (train::TrainOptions, finetune's).
struct RunStart {
  const run_config::Config& config;
  std::filesystem::path checkpoint_dir;
  bool resume = false;                        // continue from the newest checkpoint in checkpoint_dir
  std::optional<std::filesystem::path> init;  // weights to start from (a fresh run's)
  int ranks = 1;                              // the data-parallel ranks the run trains on
  bool compiled = false;                      // a compiled program's run: a change means compiling again
};

// Fills env with params and states (a checkpoint's, --init's, or fresh ones); returns the step
// training continues after, and sets `resumed` when it is a checkpoint's. Throws TrainError saying
// what to do when the folder does not fit.
// A resumed checkpoint, and --init's weights, must be of `vocab` (check_init_vocab).
int64_t prepare_state(const frontend::ModelDefinition& model, const RunStart& start,
                      const passes::TrainingProgram& program, const data::Vocab& vocab, support::Environment& env,
                      std::ostream& log, std::optional<ResumedFrom>& resumed);

// What a checkpoint records of its data stream (its examples and the shards they are read in),
// and the check that a resumed run reads the same: throws TrainError naming both when the data,
// or [train] text_shards, changed; says on `log` when the checkpoint is older than the record.
std::map<std::string, std::string> data_metadata(const data::BatchStream& stream);
void check_same_data(const ResumedFrom& resumed, const data::BatchStream& stream, std::ostream& log);

}  // namespace bertc::run_folder
