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

// What rows of several examples ([train] packing = "pack") leave to compute, as fractions measured
// on the data (data::RowWork over rows x seq_len, or over rows x seq_len^2): `tokens`, the
// positions that are an example's tokens; `scores`, the attention scores whose query and key are
// tokens of one example (what the examples need); `tiles`, the scores of the tiles the attention
// kernels compute, skipping the pairs of tiles between examples. The cost model counts an attention
// over rows (attribute blocks) at `tiles` of its square; everything else computes every position.
// The default (seq_len 0, all ones) counts the whole square: data not measured.
struct RowFractions {
  int64_t seq_len = 0;  // the positions of the rows measured (0: none measured)
  double tokens = 1, scores = 1, tiles = 1;
  double examples = 1;  // a row's, on average
  bool measured() const { return seq_len > 0; }
};

// The FLOPs of op as the kernels compute them (ir::op_flops; an attention over rows at rows.tiles of
// its square); `over_rows` gains the FLOPs of its attentions over rows, over their whole square.
int64_t counted_flops(const ir::Graph& graph, const ir::Op& op, const RowFractions& rows, int64_t* over_rows = nullptr);

// Peak FLOP/s of matrix products with `dtype` inputs on `gpu` under `precision`: BF16 or FP16
// tensor cores where the GPU has them (FP16 SIMT where not), TF32 tensor cores for f32 under
// tf32, FP32 SIMT otherwise (fp32-fp16storage does fp32 math on fp16 data).
double matrix_peak(const GpuSpec& gpu, ir::DType dtype, Precision precision);

// The cost of op under `precision` (which picks the matmul peak: fp32 SIMT, FP16 or BF16 tensor
// cores; fp32-fp16storage does fp32 math on fp16 data), its FLOPs counted_flops' under `rows`.
LaunchCost launch_cost(const ir::Graph& graph, const ir::Op& op, const std::optional<GpuSpec>& gpu,
                       Precision precision, const RowFractions& rows = {});

}  // namespace bertc::passes
