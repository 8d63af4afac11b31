// A training program's kernels compiled by NVRTC for one GPU arch (through the disk cache): the
// codegen::CompiledProgram that a .bertx holds and a device runs without compiling.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "codegen/program.h"
#include "cuda/nvrtc_compiler.h"
#include "ir/enum_names.h"
#include "passes/pipeline.h"

namespace bertc::cuda {

// What a compiled program's kernel images are: machine code for its arch (loads at once, runs on
// that arch alone), or PTX for it, which the driver compiles when it loads the program, for a GPU
// of that arch or newer (and what bertc's emulated driver runs).
enum class ImageKind { Cubin, Ptx };
BERTC_ENUM_NAMES(ImageKind, {ImageKind::Cubin, "cubin"}, {ImageKind::Ptx, "ptx"})

struct CompileSettings {
  ImageKind images = ImageKind::Cubin;
  std::optional<std::filesystem::path> cache;  // nullopt: no disk cache
  unsigned threads = 0;                        // 0: all cores
  // Called once before compiling with the number of distinct kernels; for progress output.
  std::function<void(size_t kernels, const NvrtcCompiler&)> on_start;
  // Kernels the runtime launches beside the graphs' (data parallelism's gradient casts): compiled
  // into the program's images too, so that it needs no NVRTC for them either.
  std::vector<codegen::KernelSpec> runtime_kernels;
};

// Renders and compiles `program` for options.arch (an "sm_XX"). Throws std::runtime_error when
// the arch is none, no NVRTC reaches it, or a kernel fails to compile (KernelCompileError).
codegen::CompiledProgram compile_program(const passes::TrainingProgram& program, const passes::CompileOptions& options,
                                         const std::string& model, const std::string& config_text,
                                         const CompileSettings& settings);

}  // namespace bertc::cuda
