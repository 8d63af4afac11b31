// The figures a training step is measured by on a GPU: its model FLOPs and the GPU's datasheet
// peak, whose ratio per second is MFU (model FLOPs utilization). Shared by bertc train's progress
// line and the benchmarks, so that both report the same MFU.
#pragma once

#include <string>

#include <ostream>

#include "data/pretraining_data.h"
#include "frontend/model.h"
#include "passes/cost_model.h"
#include "passes/pipeline.h"
#include "run_config/config.h"

namespace bertc::train {

// The datasheet peak (FLOP/s) of the GPU of arch sm_`sm` for matrix products at `precision`
// (passes::matrix_peak of its activation dtype); 0 when the table lacks the arch.
double peak_flops(int sm, passes::Precision precision);

// FLOPs of one optimizer step's forward and backward passes over all its micro-batches, counted
// without recompute (model FLOPs, as MFU is defined): from the cost model of `program`, or of the
// same config compiled without recompute when `program` recomputes; an attention over rows at
// `rows` of its square.
double model_flops_per_step(const frontend::ModelDefinition& model, const run_config::Config& config,
                            const passes::TrainingProgram& program, const passes::RowFractions& rows = {});

// Rows measured for the cost figures: a sample of up to this many rows, their attention counted on
// square tiles of this many positions. (codegen/family_attention.cpp's tiles: 32x32 for the SIMT
// and TF32 forwards and the tensor cores' backward, 64 queries x 32 keys for the 16-bit tensor
// cores' forward, 16x16 for the SIMT backward; the measurement says what the other two would count.)
inline constexpr int64_t kSampledRows = 4096, kCountedTile = 32;

// What `source`'s rows leave to compute at the config's seq_len (its first kSampledRows rows: the
// shard training reads first), as the cost model's fractions; not measured (RowFractions{}) for a
// config of one example a row.
passes::RowFractions row_fractions(const run_config::Config& config, const data::ExampleSource& source);

// The same of a batch's rows (its example_ids; a batch of one example a row: not measured): what
// the synthetic batches of benchmarks and checks leave to compute.
passes::RowFractions row_fractions(const data::Batch& batch);

// The same of the config's own [train] data and vocab (up to kSampledRows rows of its first shard,
// the rest unread; text is read whole to make its shards), said on `log` with bertc train's "data:"
// lines, for the compile report and bertc estimate of a config with packing = "pack", with advice
// where more examples a row would fill the padding left; not measured for one without. Data that
// is not given or cannot be read is said on `log` and not measured either (the report then counts
// the whole square: an upper bound); a stop signal while it is read throws data::Stopped.
passes::RowFractions config_row_fractions(const run_config::Config& config, std::ostream& log);

}  // namespace bertc::train
