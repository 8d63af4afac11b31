// The one table of GPU datasheet figures (../shared/FACTS.md), and how an --arch resolves to a GPU
// and a precision. The cost model and the roofline estimates read only this.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "frontend/config.h"

namespace bertc::passes {

struct GpuSpec {
  std::string_view name;     // "p40"
  std::string_view title;    // "Tesla P40"
  int arch;                  // compute capability, 61
  int multiprocessors;
  double fp32_tflops;        // SIMT FP32
  double fp16_simt_tflops;   // FP16 arithmetic without tensor cores (1/64 of FP32 on the P40)
  double fp16_tensor_tflops; // dense tensor-core FP16 (0: none)
  double bf16_tensor_tflops; // dense tensor-core BF16 (0: none)
  double bandwidth_gbs;      // memory bandwidth, GB/s
  double memory_gb;
  double shared_kb_per_block;  // largest shared memory one block may use
};

std::span<const GpuSpec> gpu_specs();

// "sm_61", "sm_90", a name ("p40", "h200") or "none"; the first GPU of an arch represents it.
// nullopt for none; throws std::invalid_argument naming the choices for anything else.
std::optional<GpuSpec> find_gpu(std::string_view arch_or_name);

// The precision "auto" means for a GPU (nullopt: the CPU): fp32 on sm_61, fp16 on sm_70 and
// sm_75, bf16 from sm_80.
std::string auto_precision(const std::optional<GpuSpec>& gpu);

// Options with arch and precision made concrete: arch "auto" becomes `detected` (the GPU present,
// "sm_XX", or "none"), precision "auto" follows auto_precision. Throws std::invalid_argument for an
// unknown arch.
frontend::CompileOptions resolve_options(frontend::CompileOptions options, const std::string& detected);

}  // namespace bertc::passes
