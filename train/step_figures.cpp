// Model FLOPs and GPU peaks (see step_figures.h).
#include "train/step_figures.h"

#include <optional>

#include <fmt/format.h>

#include "passes/cost_model.h"
#include "passes/precision.h"
#include "passes/targets.h"

namespace bertc::train {

double peak_flops(int sm, passes::Precision precision) {
  const std::optional<passes::GpuSpec> gpu = passes::gpu_of_sm(sm);
  if (!gpu) return 0;
  return passes::matrix_peak(*gpu, passes::activation_dtype(precision), precision);
}

double model_flops_per_step(const frontend::ModelDefinition& model, const run_config::Config& config,
                            const passes::TrainingProgram& program) {
  passes::TrainingProgram without_recompute;
  const passes::TrainingProgram* counted = &program;
  // (A compiled program's figures are not in its file: its recompute option says whether it may
  // have recomputed, and then the program without is counted.)
  if (program.recompute.dropped_values > 0 || config.compile.recompute != passes::RecomputePolicy::None) {
    passes::CompileOptions options = config.compile;
    options.recompute = passes::RecomputePolicy::None;
    options.dump_ir.clear();
    without_recompute = passes::compile_training(frontend::build_model(model, config.model_settings()), options, config.train);
    counted = &without_recompute;
  }
  double flops = 0;
  for (const ir::Op& op : counted->step.ops())
    flops += static_cast<double>(passes::launch_cost(counted->step, op, std::nullopt, config.compile.precision).flops);
  return flops * static_cast<double>(config.train.gradient_accumulation_steps);
}

}  // namespace bertc::train
