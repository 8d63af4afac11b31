// Finding cuBLAS: it ships with the CUDA toolkit and in PyPI wheels (PyTorch brings one), rarely
// on the loader's path; bertc looks where it found NVRTC too.
#pragma once

#include <string>
#include <vector>

#include "support/shared_library.h"

namespace bertc::runtime {

// Where bertc looks, in order: $BERTC_CUBLAS alone when set; else libcublas.so.13 and .so.12 on
// the loader's path, then beside each of `nvrtc_paths` (a toolkit's lib64 holds both), then in
// the PyPI wheel layout beside it (nvidia/cuda_nvrtc/lib/ -> nvidia/cublas/lib/, and the CUDA 13
// wheels' shared nvidia/cu13/lib/).
std::vector<std::string> cublas_candidates(const std::vector<std::string>& nvrtc_paths);

struct CublasProbe {
  support::SharedLibrary library;  // loaded for the whole process; empty when none was found
  std::vector<std::string> tried;  // "candidate: why not", for each candidate that failed
};

// Loads the first candidate that is a cuBLAS (has cublasCreate_v2), with the NVRTC libraries
// probe_nvrtc_libraries() finds. Never throws.
CublasProbe find_cublas();

}  // namespace bertc::runtime
