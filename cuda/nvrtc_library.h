// Finding NVRTC libraries and what each can compile for. CUDA 13's NVRTC targets sm_75 and
// newer; CUDA 12's (PyPI wheel nvidia-cuda-nvrtc-cu12, installed by scripts/setup.sh) reaches
// sm_61 and sm_70, so bertc looks for both.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "support/library_search.h"
#include "support/shared_library.h"

namespace bertc::cuda {

struct NvrtcLibrary {
  support::SharedLibrary library;
  int major = 0, minor = 0;
  std::vector<int> archs;  // compute capabilities it targets, e.g. 75, 80, 90

  bool supports(int arch) const;
};

struct NvrtcProbe {
  std::string candidate;               // what was tried
  std::string origin;                  // where the search found it (support::LibraryCandidate)
  std::optional<NvrtcLibrary> found;   // empty: not loadable or not NVRTC
  std::string error;                   // why not, when not found
};

// Where NVRTC lives: libnvrtc.so.13, then .so.12 (CUDA 13's and 12's; the wheels' nvidia/cu13/lib
// and nvidia/cuda_nvrtc/lib, scripts/setup.sh's .deps/nvrtc-cu12), $BERTC_NVRTC overriding.
support::LibraryLayout nvrtc_layout();

// Where bertc looks (support::library_candidates of nvrtc_layout()).
std::vector<support::LibraryCandidate> nvrtc_candidates();

// Tries every candidate; a library reached through two candidates is listed once.
std::vector<NvrtcProbe> probe_nvrtc_libraries();

}  // namespace bertc::cuda
