// The compile and optimizer options (declared once, in options.def) and the closed sets they
// take, with the one function that makes arch and precision concrete.
#pragma once

#include <string>
#include <vector>

#include "ir/enum_names.h"
#include "ir/op_info.h"
#include "passes/targets.h"
#include "support/options.h"

namespace bertc::passes {

// Tf32: fp32 everywhere, but matrix products (GEMMs and fused attention) on sm_80+ tensor cores
// with their inputs rounded to TF32 (10-bit mantissa) and fp32 accumulation: PyTorch's allow_tf32.
enum class Precision { Auto, Fp32, Fp16, Bf16, Fp32Fp16Storage, Tf32 };
BERTC_ENUM_NAMES(Precision, {Precision::Auto, "auto"}, {Precision::Fp32, "fp32"}, {Precision::Fp16, "fp16"},
                 {Precision::Bf16, "bf16"}, {Precision::Fp32Fp16Storage, "fp32-fp16storage"}, {Precision::Tf32, "tf32"})

enum class RecomputePolicy { None, Selective, Full, Auto };
BERTC_ENUM_NAMES(RecomputePolicy, {RecomputePolicy::None, "none"}, {RecomputePolicy::Selective, "selective"},
                 {RecomputePolicy::Full, "full"}, {RecomputePolicy::Auto, "auto"})

// Generated kernel or cuBLAS per matrix product (the rule: codegen/matrix_strategy.h).
enum class MatmulPolicy { Auto, Generated, Library };
BERTC_ENUM_NAMES(MatmulPolicy, {MatmulPolicy::Auto, "auto"}, {MatmulPolicy::Generated, "generated"},
                 {MatmulPolicy::Library, "library"})

// The optimizer: an op of ir/ops.def whose fusion pattern is Optimizer (adamw, lamb), by its IR
// name. A new optimizer is a new such op (docs/ARCHITECTURE.md).
struct OptimizerOp {
  ir::OpKind kind = ir::OpKind::Adamw;
  bool operator==(const OptimizerOp&) const = default;
};
std::string_view optimizer_name(OptimizerOp optimizer);

// [compile]: what the compiler builds.
struct CompileOptions {
#define BERTC_COMPILE_OPTION(member, Type, default_value, ...) Type member = default_value;
#define BERTC_OPTIMIZER_OPTION(...)
#include "passes/options.def"
#undef BERTC_OPTIMIZER_OPTION
#undef BERTC_COMPILE_OPTION
  // (the same program: an arch is the same whether named by GPU or by sm_XX, Arch's ==)
  bool operator==(const CompileOptions&) const = default;
};

// The optimizer step's settings ([train] keys; the optimizer pass's options).
struct OptimizerOptions {
#define BERTC_COMPILE_OPTION(...)
#define BERTC_OPTIMIZER_OPTION(member, Type, default_value, ...) Type member = default_value;
#include "passes/options.def"
#undef BERTC_OPTIMIZER_OPTION
#undef BERTC_COMPILE_OPTION
  // ZeRO stage 1 ([train] zero_stage = 1 on several ranks): this rank's shard of the params, of
  // `shards` (passes/optimizer_shards.h). The trainer sets them from its ranks: they are no [train]
  // key, since a config is every rank's. 1 shard: the whole model.
  int shard = 0, shards = 1;
};

const std::vector<support::OptionSpec<CompileOptions>>& compile_option_specs();
const std::vector<support::OptionSpec<OptimizerOptions>>& optimizer_option_specs();

// The precision auto means for a GPU (nullopt: the CPU): fp32 on sm_61, fp16 on sm_70 and sm_75,
// bf16 from sm_80.
Precision auto_precision(const std::optional<GpuSpec>& gpu);

// Options with arch and precision made concrete: arch auto becomes `detected` (the GPU present,
// or none), precision auto follows auto_precision. Every consumer of options downstream of the
// driver takes them resolved. Throws ir::Error when recompute auto lacks a memory budget, or a
// budget is given to another policy (which would ignore it).
CompileOptions resolve_options(CompileOptions options, const Arch& detected);
bool is_resolved(const CompileOptions& options);

}  // namespace bertc::passes

template <>
struct bertc::support::OptionType<bertc::passes::OptimizerOp> {
  static constexpr ValueKind kind = ValueKind::String;
  static std::vector<std::string> choices();  // the names of the Optimizer-pattern ops
  static OptionValue to_value(passes::OptimizerOp op) { return std::string(passes::optimizer_name(op)); }
  static std::optional<std::string> from_value(const OptionValue& v, passes::OptimizerOp& out);
};
