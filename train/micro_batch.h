// --batch-size auto: the largest micro-batch whose compiled program fits the device memory,
// keeping the configured global batch (batch_size x gradient_accumulation_steps) through
// gradient accumulation.
#pragma once

#include <cstdint>
#include <ostream>

#include "frontend/model.h"
#include "passes/pipeline.h"

namespace bertc::train {

// Bytes a device holds to train `program`: both graphs' arenas, inputs and constants, the params
// and states once (the two graphs share them), the epilogue workspace of cuBLAS products (f32, the
// largest product's result) and cuBLAS's own workspace, unless matmul is "generated".
uint64_t planned_device_bytes(const passes::TrainingProgram& program, passes::MatmulPolicy matmul);

struct MicroBatch {
  int64_t batch_size = 0, accumulation = 0;  // batch_size x accumulation = the configured global batch
  uint64_t bytes = 0;                        // planned_device_bytes at that micro-batch
};

// Tries the divisors of the global batch from the largest down, compiling each, and keeps the
// first whose plan fits `available` bytes less a reserve (5% and 256 MiB at most: allocator
// rounding, the kernels' images, per-launch scratch). Logs every size tried. Throws
// std::runtime_error naming what to change when not even a micro-batch of 1 fits.
MicroBatch choose_micro_batch(const frontend::ModelDefinition& model, const frontend::Config& config,
                              uint64_t available, std::ostream& log);

}  // namespace bertc::train
