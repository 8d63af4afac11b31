// Which warp-level strategy and tile sizes a matrix kernel (GEMM or fused attention) gets on a GPU
// arch: the one written-down rule, shared by the renderers, `bertc compile --report` and the tests.
//
// The rule (inputs = the dtype of the matrix operands):
//   f16 inputs   sm_80+ and sm_75: hmma16816 (mma.m16n8k16; on sm_75 as two m16n8k8, and without
//                cp.async, which starts at sm_80); sm_70/72: hmma884 (mma.m8n8k4); older: simt.
//   bf16 inputs  sm_80+: hmma16816; older: simt (bf16 tensor-core math starts at sm_80).
//   f32 inputs   simt, unless the precision is tf32 (opt-in: it changes the numbers), which takes
//                tf32 (mma.m16n8k8 with inputs rounded to TF32) on sm_80+ and is refused before.
//   Fused attention whose head size the strategy's tiles do not fit (not a multiple of 16) runs simt.
//   simt converts 16-bit inputs to f32 on load and never computes in half: the P40 runs FP16
//   arithmetic at 1/64 of its FP32 rate.
// cp.async pipelines (async) on sm_80+; register-staged double buffering before.
//
// Generated kernel or cuBLAS, per matmul (RenderTarget::matmul):
//   generated  every product is a generated kernel;
//   library    every product cuBLAS can express (one strided batch) runs in cuBLAS, its epilogue in
//              a generated kernel after it;
//   auto       cuBLAS for a plain product (nothing fused after it, so fusion loses nothing) of at
//              least 2^30 FLOPs, where cuBLAS's arch-tuned kernels are the safer bet unless the GPU
//              runtime measured both (RenderTarget::tuned, from --autotune); generated for the
//              rest, whose fused epilogues save a round trip of the result through memory.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "ir/dtype.h"
#include "passes/options.h"

namespace bertc::codegen {

enum class MatrixStrategy { Simt, Hmma884, Hmma16816, Tf32 };

using passes::MatmulPolicy;

// What the renderer targets. sm = 0 means no GPU (host emulation only): the sm_61 kernels.
struct RenderTarget {
  int sm = 0;
  MatmulPolicy matmul = MatmulPolicy::Auto;
  // Per product (product_key in library_gemm.h): Generated or Library as measured on the GPU
  // (bertc train --autotune); overrides `matmul` for the products it names.
  std::map<std::string, MatmulPolicy> tuned;
  // Precision tf32: f32 products on TF32 tensor cores (sm_80+).
  bool tf32 = false;
};

// The target of resolved options: their arch's sm (or a device's, `sm`), matmul policy and
// whether the precision is tf32. The one place a target is made from options.
RenderTarget render_target(const passes::CompileOptions& options);
RenderTarget render_target(const passes::CompileOptions& options, int sm);

// Whether a product (plain: nothing fused after it) goes to cuBLAS under `choice`.
bool use_library(MatmulPolicy choice, bool plain, double flops);

// Throws for tf32 below sm_80.
MatrixStrategy choose_strategy(int sm, ir::DType inputs, bool tf32 = false);
// "simt", "hmma884", "hmma16816", "tf32": the prelude's template name is "bx_" + this.
std::string strategy_name(MatrixStrategy s);
bool uses_cp_async(int sm);
// The instruction step along k: what a product's depth must be a multiple of.
int strategy_k_step(MatrixStrategy s);
// A warp's tile granularity (rows, columns): warp tiles are multiples of it.
int strategy_warp_rows(MatrixStrategy s);
int strategy_warp_cols(MatrixStrategy s);

// A GEMM block tile: BM x BN per block, BK per stage, WGM x WGN warps, STAGES in the ring.
struct GemmTiles {
  int bm, bn, bk, wgm, wgn, stages;
  int threads() const { return wgm * wgn * 32; }
};

// The default tiles of a strategy (static shared memory stays under 48 KB on every arch).
GemmTiles default_gemm_tiles(MatrixStrategy s, int sm);

}  // namespace bertc::codegen
