// Probing the CUDA driver (libcuda.so.1, dlopen'ed): is there one, and which GPUs does it see.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/shared_library.h"

namespace bertc::cuda {

// The CUDA driver bertc loads: libcuda.so.1 on the loader's path, or the file $BERTC_CUDA_DRIVER
// names (another driver: bertc's emulated one, build/cuda_emulation/libcuda.so.1, is chosen only
// so). Loaded for the process (cuInit starts the driver, which must not be unloaded after); not
// loaded with `error` set when there is none.
support::SharedLibrary open_cuda_driver(std::string* error);

struct CudaDeviceInfo {
  int ordinal = 0;
  std::string name;
  int arch = 0;  // compute capability as 10*major + minor, e.g. 61, 90
  int multiprocessors = 0;
  int64_t memory_bytes = 0;
};

struct CudaDriverProbe {
  bool loaded = false;
  std::string path;   // the libcuda that was loaded
  std::string error;  // why there is no usable driver or GPU
  int version = 0;    // e.g. 13000 for CUDA 13.0
  std::vector<CudaDeviceInfo> devices;
};

// Never throws: a machine without a driver or GPU gets loaded == false or no devices, and error says why.
CudaDriverProbe probe_cuda_driver();

}  // namespace bertc::cuda
