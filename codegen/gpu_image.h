// A kernel compiled for a GPU (a cubin, or PTX the driver compiles when it loads it) and what the
// compile says of it: what compiled programs (.bertx) hold and devices load. Made by a kernel
// compiler of the GPU backend (cuda/nvrtc_compiler.h).
#pragma once

#include <cstddef>
#include <string>

#include "codegen/ptx_loop.h"

namespace bertc::codegen {

struct PtxasInfo {  // what `ptxas -v` says of a kernel (cubin only)
  int registers = 0, shared_bytes = 0, stack_bytes = 0, spill_store_bytes = 0, spill_load_bytes = 0;
};

struct GpuImage {
  std::string name;      // the kernel
  std::string image;     // cubin, or PTX text
  bool ptx = false;
  PtxasInfo ptxas;
  LoopMix main_loop;  // of the kernel's PTX (NVRTC makes it on the way to a cubin)
  bool from_cache = false;
};

struct KernelSource {
  std::string name;    // the __global__ function
  std::string source;  // a translation unit including "bx.h"
};

struct CompileStats {
  size_t kernels = 0, cache_hits = 0, corrupt_entries = 0;
  size_t unwritten_entries = 0;  // compiled but not cached (the cache could not take them: warned)
  double seconds = 0;
};

}  // namespace bertc::codegen
