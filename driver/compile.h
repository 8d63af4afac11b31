// bertc compile: a config through the passes to what --emit names (the forward or compiled IR,
// the report, stats, params, the kernels' sources) or a compiled program (.bertx, or a training
// executable).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cuda/compile_program.h"
#include "driver/compile_flags.h"
#include "frontend/model.h"
#include "ir/enum_names.h"

namespace bertc::driver {

// What bertc compile writes (--emit).
enum class Emit { Ir, StepIr, OptimizerIr, Report, Stats, Params, Cuda, Plan };
BERTC_ENUM_NAMES(Emit, {Emit::Ir, "ir"}, {Emit::StepIr, "step-ir"}, {Emit::OptimizerIr, "optimizer-ir"},
                 {Emit::Report, "report"}, {Emit::Stats, "stats"}, {Emit::Params, "params"}, {Emit::Cuda, "cuda"},
                 {Emit::Plan, "plan"})

struct CompileArgs {
  std::string config;
  std::string emit_text = "ir";  // as given; emit() is what it names
  bool emit_given = false;
  std::string output;
  bool json = false;
  bool report = false;  // --report
  std::string profile;  // --profile: a bertc train --profile JSON to show against the estimates
  bool executable = false;  // --executable: -o is a training executable with the program inside
  int64_t ranks = 1;        // --ranks: data-parallel ranks a compiled program trains on
  std::optional<cuda::ImageKind> images;  // --images: of a compiled program's kernels (none: cubin)
};

// Writes what `args` asks for to -o (atomically) or stdout, notes on stderr; returns the exit code.
// Throws std::invalid_argument for arguments that do not go together, naming the fix.
int compile(CompileArgs args, const CompileFlags& flags, const frontend::ModelDefinition& model);

}  // namespace bertc::driver
