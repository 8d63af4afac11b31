// A training program compiled for one GPU arch: both graphs' kernels rendered, each distinct
// kernel compiled (by NVRTC: cuda/compile_program.h, through the disk cache). bertx_file.h writes
// it to a file and reads it back, so that compiling and training can be separate steps.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "codegen/kernel.h"
#include "codegen/gpu_image.h"
#include "passes/pipeline.h"

namespace bertc::codegen {

struct CompiledProgram {
  std::string model;                      // the config's name
  std::string model_program;              // the model definition's (bert, or a bertc_add_model program's)
  int64_t ranks = 1;                      // data-parallel ranks its optimizer step averages over
  passes::CompileOptions options;         // resolved (arch sm_XX, precision)
  std::string config_text;                // the TOML the program was compiled from
  std::string step_ir, optimizer_ir;      // the compiled graphs, as IR text
  GraphKernels step, optimizer;
  std::map<std::string, GpuImage> images;  // by kernel name
  std::string nvrtc_version, nvrtc_library;
  CompileStats stats;
  // The vocabulary the config named when it was compiled, as data::vocab_metadata writes it (empty:
  // none could be read then); training it with another is refused.
  std::map<std::string, std::string> vocab;
};

// The program's two graphs parsed from its IR texts (its recompute policy named "as compiled":
// the figures of the pass are not kept).
passes::TrainingProgram graphs_of(const CompiledProgram& p);

// Every kernel source of the program, with where it is launched: what --emit cuda prints.
std::string cuda_listing(const GraphKernels& step, const GraphKernels& optimizer);

}  // namespace bertc::codegen
