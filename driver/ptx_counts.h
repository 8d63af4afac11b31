// What the PTX device counted, as bertc check --device ptx prints it: the instruction mix, the
// shared banks' and global sectors' efficiency, occupancy, and each launch's projected time on the
// GPUs of the arch from the counts (ptx/projection.h) — projections, never GPU measurements.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "passes/options.h"
#include "passes/targets.h"
#include "ptx/projection.h"
#include "runtime/emulator_controls.h"

namespace bertc::driver {

// The rates of `gpu` for projections of kernels compiled in `precision`: its tensor cores' peak
// for the precision's products (none for fp32 and fp32-fp16storage), its FP32 peak and clock, its
// bandwidth, the cost model's launch cost, what a multiprocessor holds.
ptx::GpuRates rates_of(const passes::GpuSpec& gpu, passes::Precision precision);

// The thread-instructions of `counts` by class, as shares: "float fma 41.0%, float other 4.2%, ...".
std::string class_shares_text(const ptx::LaunchCounts& counts);

// The cost model's roofline seconds of launch `index` (of the records given) on `gpu`.
using RooflineOf = std::function<double(size_t index, const passes::GpuSpec& gpu)>;

// The counts of `launches` (kernels of sm_`sm` in `precision`): totals, the kernels that take the
// longest projected on the arch's first GPU (`top` of them), and the projected time of all on every
// GPU of the arch in the table, beside the roofline's where `roofline` is given. `registers_known`:
// the counts carry ptxas's registers (occupancy then counts them; else it is an upper bound from
// threads and shared memory). Sampled launches (EmulatorControls::sample_blocks) are said as such.
std::string ptx_counts_text(const std::vector<runtime::PtxLaunchRecord>& launches, int sm, passes::Precision precision,
                            bool registers_known, const RooflineOf& roofline = {}, size_t top = 12);

}  // namespace bertc::driver
