// A bert-tiny-like training step and optimizer step, every launch run from NVRTC's PTX on the PTX
// emulator (ptx/) through the kernel harness, value by value against the reference executor; or
// the same launches under host emulation (the baseline a benchmark compares against).
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "harness.h"
#include "passes/options.h"
#include "passes/targets.h"
#include "ptx/executor.h"
#include "ptx/projection.h"
#include "driver/ptx_counts.h"

namespace bertc::testing {

// The step's target and shape: examples/bert-tiny.toml's model, with these sizes of batch.
struct PtxStep {
  int sm = 61;
  passes::Precision precision = passes::Precision::Fp32;
  int64_t batch = 2, seq = 32, predictions = 4;  // (small: every thread's every instruction is interpreted)
  // The model's sizes where not bert-tiny's (0: its own): shapes that are no tile's multiple.
  int64_t hidden = 0, heads = 0, intermediate = 0, vocab = 0;
  ir::OpKind optimizer = ir::OpKind::Adamw;  // an optimizer op of ir/ops.def (adamw, lamb)
  bool rows = false;  // rows of up to 3 examples each ([train] packing = "pack": attention skipping tiles)
  codegen::ThreadOrder order = codegen::ThreadOrder::Reverse;  // (Reverse: threads and blocks shuffled)
  // A planted bug: the PTX as NVRTC made it, changed before the emulator reads it (identity when null).
  std::function<std::string(const std::string&)> mutate;
  // The launches to run (every one when null): a planted bug's test runs the kernels it touches.
  std::function<bool(const codegen::KernelSpec&)> only;
  // Bytes taken off the end of every buffer a launch is given (a planted out-of-bounds tail).
  uint64_t shrink_buffers = 0;
  // Launches timed with the arch's first GPU's latencies (ptx/timing.h), for a latency-aware
  // projection: off where only results and checks matter (the timing model costs emulator time).
  bool timed = false;
};

// One launch's counts, with the op of its graph it runs.
struct PtxLaunch {
  bool optimizer = false;  // of the optimizer's graph (else the step's)
  size_t op_index = 0;
  ir::KernelFamily family = ir::KernelFamily::None;
  std::string strategy;
  int64_t ir_flops = 0;  // the op's FLOPs as the IR counts them (ir/stats.h)
  int64_t ir_product_flops = 0;  // an attention op's products' FLOPs alone (ir/stats.h; 0 for others)
  ptx::LaunchCounts counts;
  // The compile report's roofline for the op (passes/cost_model.h), on each GPU of the table of
  // the step's arch, by its name ("p40"): what a projection is shown beside.
  std::map<std::string, double> roofline_seconds;
};

struct PtxStepRun {
  std::vector<KernelCheck> step, optimizer;  // one per launch, in launch order
  std::vector<PtxLaunch> launches;           // in launch order, both graphs
  ptx::LaunchCounts counts;                  // over every launch
  double emulator_seconds = 0;               // inside the emulator's launches alone
  double checked_seconds = 0;                // every launch with the harness's set-up and comparisons
};

using driver::rates_of;  // (driver/ptx_counts.h: what bertc check --device ptx projects with)

// Renders `s`'s kernels (every product a generated kernel), compiles one PTX module of them with
// NVRTC for sm_`s.sm`, and runs every launch of both graphs on the emulator. NVRTC failures are
// kept under `cache`/failed.
PtxStepRun run_step_on_ptx(const PtxStep& s, const std::filesystem::path& cache);

// The same launches compiled for the host (cached under `cache`) and run under host emulation:
// the seconds both graphs' launches took with the harness's set-up and comparisons (as
// PtxStepRun::checked_seconds).
double run_step_on_host(const PtxStep& s, const std::filesystem::path& cache);

}  // namespace bertc::testing
