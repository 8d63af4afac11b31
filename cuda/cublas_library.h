// Finding cuBLAS: it ships with the CUDA toolkit and in PyPI wheels (PyTorch brings one), rarely
// on the loader's path; the one taken is one the driver can run (its CUDA major version).
#pragma once

#include <string>
#include <vector>

#include "support/library_search.h"
#include "support/shared_library.h"

namespace bertc::cuda {

// Where cuBLAS lives: libcublas.so.13, then .so.12 (the wheels' nvidia/cu13/lib and
// nvidia/cublas/lib), $BERTC_CUBLAS overriding.
support::LibraryLayout cublas_layout();

// Where bertc looks (support::library_candidates of cublas_layout()).
std::vector<support::LibraryCandidate> cublas_candidates();

struct CublasProbe {
  support::SharedLibrary library;  // loaded for the whole process; empty when none was found
  std::string origin;              // where the search found it
  int major = 0, minor = 0;        // cuBLAS's version (cublasGetProperty): its CUDA major version
  std::vector<std::string> tried;  // "candidate [origin]: why not", for each candidate not taken
};

// Loads the first candidate that is a cuBLAS (has cublasCreate_v2) a driver of `driver_version`
// (cuDriverGetVersion's, 12040 for 12.4; 0: none to ask) runs: one of the driver's CUDA major
// version or older, as for NVRTC's cubins (a CUDA 13 cuBLAS on a CUDA 12 driver fails in
// cublasCreate). Never throws.
CublasProbe find_cublas(int driver_version = 0);

// "CUBLAS_STATUS_INVALID_VALUE (7): an invalid value was used as an argument" for a status of
// `probe`'s cuBLAS (its own cublasGetStatusName and cublasGetStatusString, else the number).
std::string cublas_status_text(const CublasProbe& probe, int status);

}  // namespace bertc::cuda
