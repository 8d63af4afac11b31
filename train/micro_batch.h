// --batch-size auto: the largest micro-batch whose compiled program fits the device memory,
// keeping the configured global batch (batch_size x gradient_accumulation_steps) through
// gradient accumulation.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "codegen/matrix_strategy.h"
#include "frontend/model.h"
#include "passes/pipeline.h"
#include "run_config/config.h"

namespace bertc::train {

// What a device holds to train `program` with kernels rendered for `target` (the device's: which
// products run in cuBLAS is the renderer's choice, never re-decided here): both graphs' arenas,
// inputs and constants, the params and states once (the two graphs share them), every kernel's own
// scratch, each graph's epilogue workspace of cuBLAS products (its largest), and cuBLAS's own
// workspace when any product runs in cuBLAS (a device without cuBLAS, or a program without library
// products, never loads it).
struct PlannedMemory {
  uint64_t bytes = 0;
  bool cublas = false;  // some product runs in cuBLAS: its workspace is counted
};
PlannedMemory planned_device_memory(const passes::TrainingProgram& program, const codegen::RenderTarget& target);

// The bytes of `program`'s params and optimizer state (each once: the two graphs share them): what
// training holds whatever its micro-batch, so that no batch size fits when they do not.
uint64_t resident_bytes(const passes::TrainingProgram& program);
// "the model's weights and optimizer state alone take 4.1 GiB (335,141,888 params), more than the
// 2.9 GiB available: ..." when resident_bytes(program) passes `available`; "" when they fit.
std::string weights_do_not_fit(const passes::TrainingProgram& program, uint64_t available,
                               const std::string& available_what);

struct MicroBatch {
  int64_t batch_size = 0, accumulation = 0;  // batch_size x accumulation = the configured global batch
  uint64_t bytes = 0;                        // planned_device_memory at that micro-batch
};

// Tries the divisors of the global batch from the largest down, compiling each, and keeps the
// first whose plan for `target` fits `available` bytes less a reserve (5% and 256 MiB at most:
// allocator rounding, the kernels' images and tables). Logs every size tried. Throws
// std::runtime_error naming what to change when not even a micro-batch of 1 fits.
MicroBatch choose_micro_batch(const frontend::ModelDefinition& model, const run_config::Config& config,
                              const codegen::RenderTarget& target, uint64_t available, std::ostream& log);

}  // namespace bertc::train
