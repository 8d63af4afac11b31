// Fine-tuning: a task head on a (pretrained) encoder trained for a few epochs on task examples,
// evaluated on a dev file after each epoch, the best epoch's checkpoint kept. On the CPU reference
// executor or a device (the compiled plan, one compiled shape per sequence-length bucket).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "data/vocab.h"
#include "distributed/communicator.h"
#include "frontend/model.h"
#include "run_config/config.h"
#include "support/safetensors.h"
#include "train/task_metrics.h"

namespace bertc::train {

struct FinetuneOptions {
  run_config::Config config;                    // with a [finetune] section; compile options resolved
  std::filesystem::path train_data, vocab;    // resolved paths
  std::optional<std::filesystem::path> dev_data;
  std::optional<std::filesystem::path> init;  // a bertc checkpoint or Hugging Face safetensors
  std::filesystem::path checkpoint_dir;       // checkpoint-NNNNNN.safetensors per epoch, best/ the best one
  std::filesystem::path metrics;              // JSON lines, appended
  std::optional<std::string> device;          // as TrainOptions::device; nullopt: the CPU reference
  std::filesystem::path kernel_cache;
  bool eager = false;                         // on a device: launch kernel by kernel
  // The ranks of a data-parallel fine-tuning (distributed::open_world); null: this process alone.
  // Each step's micro-batches are dealt round the ranks (each rank reads the task files itself);
  // rank 0 writes the checkpoints and the metrics.
  std::shared_ptr<distributed::Communicator> world;
};

struct EpochResult {
  int64_t epoch = 0, last_step = 0;
  double train_loss = 0;            // mean over the epoch's steps
  std::optional<TaskScores> dev;    // with a dev file
  bool best = false;                // its checkpoint is the one in best/
  bool whole = true;                // false: a stop ended it before its last step
};

struct FinetuneSummary {
  std::vector<EpochResult> epochs;
  std::vector<double> losses;       // every step's
  std::filesystem::path best_checkpoint;  // empty without a dev file
  int stopped_by_signal = 0;
};

// Runs the fine-tuning; progress on `log`. Throws TrainError, ConfigError, DataError and
// SafetensorsError with the fix in the message. Refuses a checkpoint folder with a run in it
// (fine-tuning starts afresh; its checkpoints are starting points for --init).
FinetuneSummary finetune_model(const frontend::ModelDefinition& model, const FinetuneOptions& options, std::ostream& log);

// Batch `index` of the task examples in `path` for the [finetune] config `c`, as bertc batch writes
// it (the input of bertc eval): the batches a dev pass makes (file order, each length bucket cut
// into batches of [train] batch_size), the inputs and labels the fine-tuning graph reads, format
// "bertc-batch". What the file's reading notes goes to `log`. Throws DataError for a bad file and
// std::invalid_argument for an index past the batches (naming how many there are).
support::Safetensors task_batch_file(const run_config::Config& c, const std::filesystem::path& path,
                                     const data::Vocab& vocab, int64_t index, std::ostream& log);

}  // namespace bertc::train
