// The cost model: FLOPs, bytes moved and a roofline time for every kernel launch, on a GPU of
// the datasheet table (targets.h). Fused ops carry their figures as attributes in IR dumps.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ir/graph.h"
#include "passes/options.h"
#include "passes/targets.h"

namespace bertc::passes {

// Fixed cost of one kernel launch inside a CUDA graph, added to every launch's roofline time.
inline constexpr double kLaunchSeconds = 1e-6;

struct LaunchCost {
  bool launch = false;  // sources, constants, reshapes (views) and updates launch nothing
  int64_t flops = 0;
  int64_t bytes = 0;     // read and written once each: operands (gathered rows of a gathered table) plus results
  double seconds = 0;    // max(flops / peak, bytes / bandwidth) + kLaunchSeconds; 0 without a GPU
};

// Peak FLOP/s of matrix products with `dtype` inputs on `gpu` under `precision`: BF16 or FP16
// tensor cores where the GPU has them (FP16 SIMT where not), TF32 tensor cores for f32 under
// tf32, FP32 SIMT otherwise (fp32-fp16storage does fp32 math on fp16 data).
double matrix_peak(const GpuSpec& gpu, ir::DType dtype, Precision precision);

// The cost of op under `precision` (which picks the matmul peak: fp32 SIMT, FP16 or BF16 tensor
// cores; fp32-fp16storage does fp32 math on fp16 data).
LaunchCost launch_cost(const ir::Graph& graph, const ir::Op& op, const std::optional<GpuSpec>& gpu,
                       Precision precision);

}  // namespace bertc::passes
