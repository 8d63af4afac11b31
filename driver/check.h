// `bertc check`: one training step and optimizer step of the compiled program on a device (host
// emulation or GPU), every kernel's results compared with the reference executor's.
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "codegen/program.h"
#include "driver/compile_flags.h"
#include "frontend/model.h"
#include "ir/enum_names.h"
#include "ptx/approximations.h"
#include "run_config/config.h"

namespace bertc::ptx {
// (the names `bertc check --approx` takes: here, as ptx/ may not include ir/'s table macro)
BERTC_ENUM_NAMES(ApproxResults, {ApproxResults::WorstCase, "worst"}, {ApproxResults::CorrectlyRounded, "rounded"})
}  // namespace bertc::ptx

namespace bertc::driver {

struct CheckOptions {
  std::string device = "host";       // host or cuda
  std::optional<double> tolerance;   // default: 1e-3 at fp32, 5e-2 at 16-bit precisions
  bool all = false;                  // print every value's error, not only those beyond
  // The PTX device only: run at most this many blocks of each launch and project from their counts
  // (runtime::EmulatorControls::sample_blocks), comparing no value; 0: every block, every value compared.
  uint32_t sample_blocks = 0;
  // The PTX device only: the approximate instructions' results (ptx/approximations.h). Worst: each
  // at the edge of the PTX ISA's error bound, so that a pass says any GPU's ex2, rsqrt, tanh and
  // division would pass too; unset: worst on the PTX device, and refused on any other.
  std::optional<ptx::ApproxResults> approx;
  // The PTX device only: the emulator's schedule (runtime::EmulatorControls::schedule_seed); unset: 1.
  std::optional<uint64_t> schedule_seed;
  // The PTX device only: how many blocks of a launch run side by side under a seed other than 0
  // (runtime::EmulatorControls::resident_blocks); unset: 4.
  std::optional<uint32_t> resident_blocks;
};

// Returns 0 when every value is within tolerance, else 1 (after listing those beyond, the first
// — the likely culprit — marked). Sampled (options.sample_blocks): 0 when every launch ran
// without a checker's finding (a finding throws, as unsampled).
int run_check(const frontend::ModelDefinition& model, const run_config::Config& config, const CheckOptions& options,
              std::ostream& out);
// The same for a compiled program (a .bertx's, as bertc train FILE.bertx runs it): its graphs, its
// kernels (on CUDA its images) against the reference executor on its graphs; `config` is the
// program's.
int run_check(const codegen::CompiledProgram& compiled, const run_config::Config& config, const CheckOptions& options,
              std::ostream& out);

// bertc check FILE: a config (compiled here, `flags` applied) or a compiled program (.bertx, or a
// training executable), one of the two run_check's above. A signal ends it at once, saying so (it
// writes nothing but its report).
int check(const std::string& file, const CompileFlags& flags, const CheckOptions& options,
          const frontend::ModelDefinition& model, std::ostream& out);

}  // namespace bertc::driver
