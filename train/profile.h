// The per-kernel profile of one training step (`bertc train --profile STEP`): each launch's
// measured time next to what the compile report estimates for it (its roofline), joined with the
// IR (op scope, family, strategy), sorted by time: what the next kernel work is chosen from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "passes/cost_model.h"
#include "passes/options.h"
#include "passes/targets.h"
#include "runtime/plan_executor.h"

namespace bertc::train {

struct ProfileRow {
  std::string graph;     // "step" (one micro-batch) or "optimizer"
  size_t launch = 0;     // index in that graph's launches
  size_t op = 0;         // the op of the graph it runs
  std::string kernel;    // k_<hash>, or cublas_<hash> for a cuBLAS-only launch
  std::string family, strategy, scope;
  int64_t flops = 0, bytes = 0;  // the cost model's, as in the compile report
  double seconds = 0;            // measured
  double estimate_seconds = 0;   // the roofline estimate for the compile's GPU; 0 without one
  double tflops() const { return seconds > 0 ? flops / seconds / 1e12 : 0; }
  double gbs() const { return seconds > 0 ? bytes / seconds / 1e9 : 0; }
  // Measured over estimated time: 1 is the roofline; 0 when there is no estimate.
  double ratio() const { return estimate_seconds > 0 ? seconds / estimate_seconds : 0; }
};

struct Profile {
  int64_t step = 0;
  std::string device;    // the device's name
  std::string gpu;       // the GPU the estimates are for ("" when none)
  std::vector<ProfileRow> rows;  // slowest first
  double seconds() const;
  double estimate_seconds() const;
};

// One graph's timed launches (PlanExecutor::profile_next_run).
struct TimedPlan {
  std::string graph;
  const runtime::PlanExecutor* plan;
  std::vector<runtime::LaunchTime> times;
};

// The rows of `plans`, with estimates for `gpu` (none: no estimate) under `precision`, an attention
// over rows of several examples at `rows` (passes/cost_model.h), slowest first.
Profile make_profile(int64_t step, const std::string& device, const std::vector<TimedPlan>& plans,
                     const std::optional<passes::GpuSpec>& gpu, passes::Precision precision,
                     const passes::RowFractions& rows);

// The table: the `top` slowest launches, then the totals per family, then the step's total.
std::string profile_table(const Profile& p, size_t top = 30);

// A compiled graph's launches, by the name profiles give it ("step", "optimizer").
struct NamedPlan {
  std::string graph;
  const ir::Graph* ops;
  const codegen::GraphKernels* kernels;
};

// `p` joined with a compile of the same program: every launch checked to run the kernel that
// graph's launch has there (else std::runtime_error: the profile is of another program) and every
// launch timed (else std::runtime_error: a profile cut short), its
// estimate recomputed for `gpu` and `rows` (what `bertc compile --report --profile` shows).
Profile estimate_for(const Profile& p, const std::vector<NamedPlan>& plans, const std::optional<passes::GpuSpec>& gpu,
                     passes::Precision precision, const passes::RowFractions& rows);

nlohmann::json profile_json(const Profile& p);
// Reads what profile_json wrote; throws std::runtime_error naming what is missing or wrong.
Profile profile_from_json(const nlohmann::json& j);

}  // namespace bertc::train
