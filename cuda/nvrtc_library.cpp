// Loads NVRTC libraries with dlopen and asks each for its version and target architectures.
#include "cuda/nvrtc_library.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

namespace bertc::cuda {

bool NvrtcLibrary::supports(int arch) const { return std::find(archs.begin(), archs.end(), arch) != archs.end(); }

support::LibraryLayout nvrtc_layout() {
  return {"BERTC_NVRTC", {"libnvrtc.so.13", "libnvrtc.so.12"}, {"nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib"},
          "nvrtc-cu12/nvidia/cuda_nvrtc/lib"};
}

std::vector<support::LibraryCandidate> nvrtc_candidates() { return support::library_candidates(nvrtc_layout()); }

namespace {

// NVRTC entry points used here; nvrtcResult is an int enum whose success value is 0.
using VersionFn = int (*)(int*, int*);
using NumArchsFn = int (*)(int*);
using ArchsFn = int (*)(int*);

std::optional<NvrtcLibrary> query(support::SharedLibrary lib, std::string* error) {
  auto version = lib.function<VersionFn>("nvrtcVersion");
  auto num_archs = lib.function<NumArchsFn>("nvrtcGetNumSupportedArchs");
  auto archs = lib.function<ArchsFn>("nvrtcGetSupportedArchs");
  if (!version || !num_archs || !archs) {
    *error = lib.path() + " lacks nvrtcVersion/nvrtcGetSupportedArchs (NVRTC older than 11.2?)";
    return std::nullopt;
  }
  NvrtcLibrary out;
  int n = 0;
  if (version(&out.major, &out.minor) != 0 || num_archs(&n) != 0 || n < 0 || n > 1024) {
    *error = lib.path() + ": NVRTC did not report its version or architectures";
    return std::nullopt;
  }
  out.archs.resize(static_cast<size_t>(n));
  if (n > 0 && archs(out.archs.data()) != 0) {
    *error = lib.path() + ": nvrtcGetSupportedArchs failed";
    return std::nullopt;
  }
  out.library = std::move(lib);
  return out;
}

}  // namespace

std::vector<NvrtcProbe> probe_nvrtc_libraries() {
  std::vector<NvrtcProbe> probes;
  std::set<std::string> seen;
  for (const support::LibraryCandidate& candidate : nvrtc_candidates()) {
    NvrtcProbe probe{candidate.path, candidate.origin, std::nullopt, {}};
    support::SharedLibrary lib = support::SharedLibrary::open(candidate.path, &probe.error);
    if (lib.loaded()) {
      std::error_code ec;
      const auto real = std::filesystem::canonical(lib.path(), ec);
      if (!seen.insert(ec ? lib.path() : real.string()).second) continue;  // same file, other name
      probe.found = query(std::move(lib), &probe.error);
    }
    probes.push_back(std::move(probe));
  }
  return probes;
}

}  // namespace bertc::cuda
