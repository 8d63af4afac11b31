// Training — on the CPU reference executor, or the compiled plan on a device (the Host device's
// emulation or a GPU): the loop over steps and micro-batches. Its parts: progress.h (the progress
// line and metrics), resume.h (where a run starts), checkpoint.h, lr_schedule.h, batches.h and
// batch_loader.h (data), graph_runner.h (how a graph runs), micro_batch.h (--batch-size auto),
// autotune.h, step_figures.h (MFU); train_error.h (what they throw).
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "codegen/program.h"
#include "distributed/communicator.h"
#include "frontend/model.h"
#include "run_config/config.h"
#include "run_folder/train_error.h"
#include "runtime/emulator_controls.h"

namespace bertc::train {

struct TrainOptions {
  run_config::Config config;                    // compile options resolved
  int64_t stop_after = 0;                     // last step to run in this call (the run is [train] steps long)
  std::filesystem::path data, vocab;          // resolved paths
  std::filesystem::path checkpoint_dir;
  std::filesystem::path metrics;              // JSON lines, appended
  bool resume = false;                        // continue from the newest checkpoint in checkpoint_dir
  std::optional<std::filesystem::path> init;  // Hugging Face safetensors to start from
  bool live_progress = false;                 // rewrite one progress line (a terminal) or print lines
  // A device of runtime's registry (device_registry.h) running the compiled plan: its kernels
  // rendered for config.compile.arch (or the device's own arch), cached in `kernel_cache`;
  // nullopt: the CPU reference executor, op by op.
  std::optional<std::string> device;
  bool eager = false;                         // on a device: launch kernel by kernel, no recorded device graph
  // --batch-size auto: the largest micro-batch that fits the device's free memory (or
  // `device_memory` bytes when given), keeping batch_size x gradient_accumulation_steps.
  bool auto_batch = false;
  // On a device: time generated kernels against cuBLAS per product first and keep the faster
  // (cached in kernel_cache/autotune.json).
  bool autotune = false;
  std::optional<uint64_t> device_memory;
  std::filesystem::path kernel_cache;
  // On a device: time each launch of this step (its first micro-batch and its optimizer step),
  // print the per-kernel table (profile.h) and write it as JSON to `profile_out`.
  std::optional<int64_t> profile_step;
  std::filesystem::path profile_out;
  // Where the device measures no time but counts what its launches executed (an emulated GPU:
  // Device::counted_launches), --profile prints this of the step's launches instead: counts and
  // projections, never times (driver/train_run.cpp gives ptx_counts_text).
  std::function<std::string(const std::vector<runtime::PtxLaunchRecord>& launches, int sm, passes::Precision precision,
                            bool registers_known)>
      counted_profile;
  // The ranks of a data-parallel run (distributed::open_world); null: this process alone. Rank 0 writes
  // checkpoints, metrics and the progress; every rank trains on its share of each global batch of
  // ranks x batch_size x gradient_accumulation_steps.
  std::shared_ptr<distributed::Communicator> world;
  // A .bertx's program (bertc compile -o): its graphs and kernels run as compiled, on `device`
  // (no pass, no render; on CUDA its images, no NVRTC). Its options are config.compile.
  std::shared_ptr<const codegen::CompiledProgram> compiled;
};

struct TrainSummary {
  int64_t first_step = 0, last_step = 0;      // optimizer steps run in this call
  double first_loss = 0, last_loss = 0;       // mean loss of the first and of the last log_every steps
  std::vector<double> losses;                 // every step's loss, in order
  int stopped_by_signal = 0;                  // the signal that ended the run early (checkpointed): run_folder/stop_request.h
};

// Trains; progress goes to `log`. Throws TrainError and other std::runtime_error subclasses with
// actionable messages.
TrainSummary train_model(const frontend::ModelDefinition& model, const TrainOptions& options, std::ostream& log);

// A fresh dropout seed per micro-batch, a function of the run's seed only: a resumed run draws
// the same masks as an uninterrupted one.
int64_t dropout_seed(uint64_t seed, int64_t micro_batch);

// The program as training runs it on a device: each graph with the values training reads (the
// losses, MLM logits, gradient norm, loss scale) appended to its outputs, as a plan runner
// renders it. bertc compile -o FILE.bertx compiles this, so that bertc train FILE.bertx runs it
// as it is.
passes::TrainingProgram runnable_program(passes::TrainingProgram program);

}  // namespace bertc::train
