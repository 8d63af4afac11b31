// Kernel source to GPU code with NVRTC: the library that reaches the target arch, cubin for the
// exact arch (PTX only where that library's newest arch is older), ptxas figures per kernel, many
// kernels in parallel, and a disk cache keyed by source, options and NVRTC version.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "codegen/gpu_image.h"
#include "codegen/host_compile.h"
#include "cuda/nvrtc_library.h"

namespace bertc::cuda {

using codegen::CompileStats;
using codegen::GpuImage;
using codegen::KernelSource;
using codegen::PtxasInfo;

// Whether a driver of `driver_version` (cuDriverGetVersion's, 12080 for 12.8; 0: none to ask)
// loads what NVRTC `nvrtc_version` ("13.0") made: cubins of the driver's CUDA major version or
// older (minor version compatibility), PTX only of its version or older (a driver cannot JIT newer
// PTX). An unreadable version string is taken as loadable (the load itself then says).
bool driver_loads(const std::string& nvrtc_version, int driver_version, bool ptx);

class NvrtcCompiler {
 public:
  // The first NVRTC library (in nvrtc_candidates() order) that compiles for sm_<arch>, as cubin if
  // any does, else as PTX of the newest arch below. With `driver_version` (cuDriverGetVersion's,
  // e.g. 12080; 0: no driver to load them, compile only), only libraries whose output that driver
  // loads: a cubin of the driver's CUDA major version or older, PTX of its version or older (a
  // driver cannot JIT newer PTX). Throws std::runtime_error listing the libraries found and the
  // archs each reaches, and how to get one (BERTC_NVRTC, scripts/setup.sh).
  static NvrtcCompiler for_arch(int arch, int driver_version = 0);
  // PTX for compute_<arch>: to read which instructions a kernel uses, or to run an older arch's
  // kernels on a newer GPU (the driver compiles PTX for the GPU present when it loads it). With
  // `driver_version`, only an NVRTC no newer than that driver. Throws like for_arch.
  static NvrtcCompiler ptx_for_arch(int arch, int driver_version = 0);

  int arch() const { return arch_; }
  bool ptx() const { return ptx_; }
  std::string version() const;       // "13.0"
  const std::string& library() const { return library_.library.path(); }
  std::vector<std::string> options() const;
  // NVRTC's .loc directives in the PTX (-lineinfo): the source line of each instruction, what the
  // PTX emulator names in its findings. The code is the same.
  void add_line_info() { line_info_ = true; }

  // One kernel, no cache. Throws KernelCompileError with NVRTC's log and the path where the failing
  // source was written (under `failed_folder`).
  GpuImage compile(const KernelSource& kernel, const std::filesystem::path& failed_folder) const;

  NvrtcCompiler(NvrtcCompiler&&) = default;

 private:
  NvrtcCompiler(NvrtcLibrary library, int arch, int target, bool ptx);
  NvrtcLibrary library_;
  int arch_, target_;  // asked for, and compiled for (differ only for PTX)
  bool ptx_;
  bool line_info_ = false;
};

// Compiles every kernel on `threads` threads (0: all cores), reading and filling the cache under
// `cache` (nullopt: no cache). Entries carry a checksum; a corrupt one is rebuilt and counted.
std::vector<GpuImage> compile_all(const NvrtcCompiler& compiler, const std::vector<KernelSource>& kernels,
                                  const std::optional<std::filesystem::path>& cache, CompileStats* stats = nullptr,
                                  unsigned threads = 0);

// Parses the ptxas -v lines of an NVRTC log for `kernel` (all of the log when empty).
PtxasInfo parse_ptxas_log(const std::string& log, const std::string& kernel = {});

}  // namespace bertc::cuda
