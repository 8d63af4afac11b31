// The figures a training step is measured by on a GPU: its model FLOPs and the GPU's datasheet
// peak, whose ratio per second is MFU (model FLOPs utilization). Shared by bertc train's progress
// line and the benchmarks, so that both report the same MFU.
#pragma once

#include <string>

#include "frontend/model.h"
#include "passes/pipeline.h"
#include "run_config/config.h"

namespace bertc::train {

// The datasheet peak (FLOP/s) of the GPU of arch sm_`sm` for matrix products at `precision`
// (passes::matrix_peak of its activation dtype); 0 when the table lacks the arch.
double peak_flops(int sm, passes::Precision precision);

// FLOPs of one optimizer step's forward and backward passes over all its micro-batches, counted
// without recompute (model FLOPs, as MFU is defined): from the cost model of `program`, or of the
// same config compiled without recompute when `program` recomputes.
double model_flops_per_step(const frontend::ModelDefinition& model, const run_config::Config& config,
                            const passes::TrainingProgram& program);

}  // namespace bertc::train
