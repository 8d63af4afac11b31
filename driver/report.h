// What `compile --emit stats|params` and `info` print, as text for people and JSON for scripts.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "cuda/nvrtc_library.h"
#include "codegen/program.h"
#include "run_config/config.h"
#include "frontend/model.h"
#include "ir/graph.h"
#include "passes/report.h"
#include "cuda/cublas_library.h"
#include "cuda/cuda_driver.h"

namespace bertc::driver {

nlohmann::json stats_json(const run_config::Config& config, const std::string& model_name, const ir::Graph& graph);
std::string stats_text(const nlohmann::json& stats);

nlohmann::json params_json(const ir::Graph& graph);
std::string params_text(const nlohmann::json& params);

nlohmann::json report_json(const passes::CompileReport& report);
// "" when the plan fits the report's GPU (or it has none); else what it takes, what the GPU has,
// and the settings that make it smaller, those only that are not set already and, where the report
// has its smallest_device_bytes, only when they can make it fit (else: a GPU with more memory).
// (The CUDA context and kernels take some more.)
std::string memory_warning(const passes::CompileReport& report);
// "memory: 5.2 GB a GPU of a p40, 3.1 GB with [train] zero_stage = 1 over 8 ranks (...); it has 24 GB:
// fits": the device memory a rank takes with the whole optimizer state and with ZeRO stage 1's share
// of it (CompileReport::device_bytes_with_zero1), and whether each fits the report's GPU.
std::string zero1_memory_line(const passes::CompileReport& report, int ranks);
// Sets report.smallest_device_bytes where the plan does not fit its GPU: `model` compiled again
// under `config` at batch_size 1 with recompute full (itself, where it is that already).
void note_smallest_plan(passes::CompileReport& report, const frontend::ModelDefinition& model,
                        const run_config::Config& config);
std::string report_text(const passes::CompileReport& report, const std::string& name);
// "" where the report's rows are not measured; else what they leave to compute and the FLOPs of a
// real token: the step graphs' FLOPs over the real tokens a step holds, and against what the real
// tokens alone take (CompileReport::real_token_flops). Lines of the report's "per optimizer step".
std::string rows_text(const passes::CompileReport& report);

// The compiled kernels: per family how many, their launches, registers, shared memory and
// spills (ptxas), and, `compiled_now`, the compile's time and cache hits (a .bertx records
// neither: its program was compiled by another run).
nlohmann::json kernels_json(const codegen::CompiledProgram& p, bool compiled_now = true);
std::string kernels_text(const codegen::CompiledProgram& p, bool compiled_now = true);

// What a .bertx file holds (bertc info FILE.bertx).
nlohmann::json bertx_json(const codegen::CompiledProgram& p);
std::string bertx_text(const codegen::CompiledProgram& p, const std::string& path);

nlohmann::json info_json(const cuda::CudaDriverProbe& driver, const std::vector<cuda::NvrtcProbe>& nvrtc,
                         const cuda::CublasProbe& cublas);
std::string info_text(const nlohmann::json& info);

}  // namespace bertc::driver
