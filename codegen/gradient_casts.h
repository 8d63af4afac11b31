// The kernels that round a data-parallel rank's gradients to 16 bits before a collective sums
// them and widen the sums back (gradient_compression = "fp16" / "bf16" summed by NCCL on a GPU):
// rendered over the prelude like a graph's kernels, launched by the trainer around the sums.
#pragma once

#include <cstdint>
#include <map>

#include "codegen/kernel.h"
#include "ir/graph.h"
#include "ir/tensor_type.h"

namespace bertc::codegen {

// pack (from, to, n, ranks):   to[i] = 16-bit(from[i] / ranks)   — each rank's share, so that the
//                              sum over the ranks stays within the range of the mean
// unpack (from, to, n, ranks): to[i] = ranks * float(from[i])
// Parameters: `from` and `to` buffers (float and the 16-bit type), `n` and `ranks` as bx_i64. The
// same rounding as distributed::GradientExchange's on the host (ir::f16_bits / bf16_bits: nearest even),
// so a GPU's compressed sums are the host path's.
struct GradientCasts {
  KernelSpec pack, unpack;
};

// `half`: F16 or BF16. The launch geometry covers `elements` (a grid-stride loop): render once
// per tensor size, or once for the largest and launch it for every smaller one.
GradientCasts gradient_casts(ir::DType half, int64_t elements);

// The casts of every gradient a data-parallel run sums (one per param of the step graph), by
// element count, each distinct count once: what the trainer launches with gradient_compression
// fp16 / bf16 on a device, and what a compiled program (.bertx) carries images of for it.
std::map<int64_t, GradientCasts> gradient_casts_for(const ir::Graph& step, ir::DType half);

}  // namespace bertc::codegen
