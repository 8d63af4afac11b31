// The option tables made from options.def, and resolving arch and precision.
#include "passes/options.h"

#include <fmt/format.h>

#include "ir/error.h"

namespace bertc::passes {

using support::OptionSpec;

const std::vector<OptionSpec<CompileOptions>>& compile_option_specs() {
  static const std::vector<OptionSpec<CompileOptions>> specs = {
#define BERTC_COMPILE_OPTION(member, Type, default_value, check, scope, pass_keys, doc) \
  BERTC_OPTION_SPEC(CompileOptions, "compile", member, Type, default_value, check, scope, pass_keys, doc),
#define BERTC_OPTIMIZER_OPTION(...)
#include "passes/options.def"
#undef BERTC_OPTIMIZER_OPTION
#undef BERTC_COMPILE_OPTION
  };
  return specs;
}

const std::vector<OptionSpec<OptimizerOptions>>& optimizer_option_specs() {
  static const std::vector<OptionSpec<OptimizerOptions>> specs = {
#define BERTC_COMPILE_OPTION(...)
#define BERTC_OPTIMIZER_OPTION(member, Type, default_value, check, key, doc) \
  BERTC_OPTION_SPEC(OptimizerOptions, "train", member, Type, default_value, check, Program, "optimizer:" key, doc),
#include "passes/options.def"
#undef BERTC_OPTIMIZER_OPTION
#undef BERTC_COMPILE_OPTION
  };
  return specs;
}

Precision auto_precision(const std::optional<GpuSpec>& gpu) {
  if (!gpu || gpu->arch < 70) return Precision::Fp32;
  return gpu->arch < 80 ? Precision::Fp16 : Precision::Bf16;
}

CompileOptions resolve_options(CompileOptions o, const Arch& detected) {
  // The budget and the policy that reads it come from a config and flags that override it: only
  // together do they say whether one is missing or ignored.
  if (o.recompute == RecomputePolicy::Auto && o.memory_budget == 0)
    throw ir::Error("recompute auto needs a memory budget: bytes of activations to fit in ([compile] memory_budget, "
                    "--memory-budget BYTES, or recompute{budget=BYTES} in bertc-opt)");
  if (o.recompute != RecomputePolicy::Auto && o.memory_budget != 0)
    throw ir::Error(fmt::format("memory budget {} is read only by recompute auto, and recompute is {}: pass --recompute "
                                "auto, or drop the budget (--memory-budget 0)",
                                o.memory_budget, ir::enum_name(o.recompute)));
  if (o.arch.is_auto()) o.arch = detected;
  if (o.precision == Precision::Auto) o.precision = auto_precision(o.arch.gpu());
  if (o.precision == Precision::Tf32 && o.arch.sm() < 80)
    throw ir::Error(fmt::format("precision tf32 needs TF32 tensor cores (sm_80 or newer), and the arch is {}: use "
                                "precision fp32 there, or pass --arch sm_80 (or newer)",
                                o.arch.text()));
  return o;
}

bool is_resolved(const CompileOptions& o) { return !o.arch.is_auto() && o.precision != Precision::Auto; }

std::string_view optimizer_name(OptimizerOp optimizer) { return ir::op_info(optimizer.kind).name; }

}  // namespace bertc::passes

std::vector<std::string> bertc::support::OptionType<bertc::passes::OptimizerOp>::choices() {
  std::vector<std::string> names;
  for (const ir::OpInfo& op : ir::all_ops())
    if (op.traits.pattern == ir::FusionPattern::Optimizer) names.emplace_back(op.name);
  return names;
}

std::optional<std::string> bertc::support::OptionType<bertc::passes::OptimizerOp>::from_value(
    const OptionValue& v, passes::OptimizerOp& out) {
  const std::string& name = std::get<std::string>(v);
  if (auto problem = choice_problem(name, choices())) return problem;
  out.kind = *ir::op_kind_from_name(name);
  return std::nullopt;
}
