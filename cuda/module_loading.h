// Loading a kernel image into the CUDA driver with its JIT's logs (cuModuleLoadDataEx), so that a
// PTX the driver refuses (a program for another arch, PTX newer than the driver) is reported in
// ptxas' own words and not only as a CUresult.
#pragma once

#include <string>

namespace bertc::cuda {

// cuModuleLoadDataEx(CUmodule*, const void* image, unsigned n, CUjit_option* options, void** values).
using LoadDataExFn = int (*)(void** module, const void* image, unsigned n, int* options, void** values);

struct ModuleLoad {
  int result = 0;          // the CUresult
  std::string error_log;   // the JIT's error log (CU_JIT_ERROR_LOG_BUFFER), "" when it wrote none
  std::string info_log;    // its info log (CU_JIT_INFO_LOG_BUFFER)
};

// Loads `image` (a cubin, or NUL-terminated PTX) through `load`, with both logs asked for.
ModuleLoad load_module(LoadDataExFn load, void** module, const void* image);

// "ptxas: ..." lines to add to a failed load's error: the error log, else the info log, trimmed
// (a log may run long: 4000 bytes are kept); "" when the JIT said nothing.
std::string jit_log_text(const ModuleLoad& load);

}  // namespace bertc::cuda
