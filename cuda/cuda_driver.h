// Probing the CUDA driver (libcuda.so.1, dlopen'ed): is there one, and which GPUs does it see.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace bertc::cuda {

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
