// The strategy rule and default tiles of the matrix kernels (documented in matrix_strategy.h).
#include "codegen/matrix_strategy.h"

#include <stdexcept>

#include <fmt/format.h>

#include "ir/error.h"

namespace bertc::codegen {

MatrixStrategy choose_strategy(int sm, ir::DType inputs, bool tf32) {
  if (inputs == ir::DType::F32 && tf32) {
    if (sm < 80)
      throw ir::Error(fmt::format("precision tf32 needs TF32 tensor cores (sm_80 or newer), not sm_{}: use precision fp32", sm));
    return MatrixStrategy::Tf32;
  }
  if (inputs == ir::DType::F16) {
    if (sm >= 75) return MatrixStrategy::Hmma16816;
    if (sm >= 70) return MatrixStrategy::Hmma884;
  }
  if (inputs == ir::DType::BF16 && sm >= 80) return MatrixStrategy::Hmma16816;
  return MatrixStrategy::Simt;
}

std::string strategy_name(MatrixStrategy s) {
  switch (s) {
    case MatrixStrategy::Simt: return "simt";
    case MatrixStrategy::Hmma884: return "hmma884";
    case MatrixStrategy::Hmma16816: return "hmma16816";
    case MatrixStrategy::Tf32: return "tf32";
  }
  throw std::logic_error("unknown matrix strategy");
}

RenderTarget render_target(const passes::CompileOptions& options) { return render_target(options, options.arch.sm()); }

RenderTarget render_target(const passes::CompileOptions& options, int sm) {
  return {sm, options.matmul, {}, options.precision == passes::Precision::Tf32};
}

bool use_library(MatmulPolicy choice, bool plain, double flops) {
  switch (choice) {
    case MatmulPolicy::Generated: return false;
    case MatmulPolicy::Library: return true;
    case MatmulPolicy::Auto: return plain && flops >= 1073741824.0;
  }
  throw std::logic_error("unknown matmul policy");
}

bool uses_cp_async(int sm) { return sm >= 80; }

int strategy_k_step(MatrixStrategy s) {
  switch (s) {
    case MatrixStrategy::Simt: return 1;
    case MatrixStrategy::Hmma884: return 4;
    case MatrixStrategy::Hmma16816: return 16;
    case MatrixStrategy::Tf32: return 8;
  }
  throw std::logic_error("unknown matrix strategy");
}

int strategy_warp_rows(MatrixStrategy s) { return s == MatrixStrategy::Simt ? 4 : 16; }
int strategy_warp_cols(MatrixStrategy s) { return s == MatrixStrategy::Simt ? 8 : 16; }

GemmTiles default_gemm_tiles(MatrixStrategy s, int sm) {
  switch (s) {
    // 8 warps of 32 x 64: 64 accumulators and 12 shared loads per 64 FFMA per lane; two stages
    // of 128 x 16 f32 tiles are 40 KB.
    case MatrixStrategy::Simt: return {128, 128, 16, 4, 2, 2};
    // 4 warps of 64 x 32 (8 m8n8k4 quad-pair steps per k-step of 4); two stages are 30 KB.
    case MatrixStrategy::Hmma884: return {128, 64, 32, 2, 2, 2};
    // 4 warps of 64 x 32 (16 mma per k-step of 16); three cp.async stages are 45 KB.
    case MatrixStrategy::Hmma16816: return {128, 64, 32, 2, 2, uses_cp_async(sm) ? 3 : 2};
    // 4 warps of 64 x 32 (16 m16n8k8 per k-step of 8); f32 tiles are twice as wide as 16-bit ones,
    // so a stage is 16 deep: three cp.async stages are 45 KB.
    case MatrixStrategy::Tf32: return {128, 64, 16, 2, 2, 3};
  }
  throw std::logic_error("unknown matrix strategy");
}

}  // namespace bertc::codegen
