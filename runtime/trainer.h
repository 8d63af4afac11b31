// Training — on the CPU reference executor, or the compiled plan on a device (the Host device's
// emulation or a GPU): the BERT data pipeline, the step and optimizer graphs, the learning-rate
// schedule, progress and metrics, checkpoints and resume.
#pragma once

#include <filesystem>
#include <optional>
#include <ostream>

#include "frontend/model.h"

namespace bertc::runtime {

struct TrainOptions {
  frontend::Config config;
  int64_t stop_after = 0;                     // last step to run in this call (the run is [train] steps long)
  std::filesystem::path data, vocab;          // resolved paths
  std::filesystem::path checkpoint_dir;
  std::filesystem::path metrics;              // JSON lines, appended
  bool resume = false;                        // continue from the newest checkpoint in checkpoint_dir
  std::optional<std::filesystem::path> init;  // Hugging Face safetensors to start from
  bool live_progress = false;                 // rewrite one progress line (a terminal) or print lines
  // cpu: the reference executor, op by op; host: the compiled plan (rendered kernels at memory-plan
  // offsets) under the host emulation, the kernels of sm_`host_sm` (0: sm_61's), cached in
  // `kernel_cache`; cuda: the compiled plan on GPU 0 (not yet validated on a GPU).
  std::string device = "cpu";
  int host_sm = 0;
  bool eager = false;                         // host/cuda: launch kernel by kernel, no recorded device graph
  // --batch-size auto: the largest micro-batch that fits the device's free memory (or
  // `device_memory` bytes when given), keeping batch_size x gradient_accumulation_steps.
  bool auto_batch = false;
  // host/cuda: time generated kernels against cuBLAS per product on the device first and keep the
  // faster (cached in kernel_cache/autotune.json).
  bool autotune = false;
  std::optional<uint64_t> device_memory;
  std::filesystem::path kernel_cache;
};

struct TrainSummary {
  int64_t first_step = 0, last_step = 0;      // optimizer steps run in this call
  double first_loss = 0, last_loss = 0;       // mean loss of the first and of the last log_every steps
  std::vector<double> losses;                 // every step's loss, in order
};

// Trains; progress goes to `log`. Throws std::runtime_error subclasses with actionable messages.
TrainSummary train_model(const frontend::ModelDefinition& model, const TrainOptions& options, std::ostream& log);

}  // namespace bertc::runtime
