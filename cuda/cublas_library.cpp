// Finding and loading cuBLAS (see cublas_library.h).
#include "cuda/cublas_library.h"

#include <fmt/format.h>

#include "cuda/vendor_abi.h"

namespace bertc::cuda {

support::LibraryLayout cublas_layout() {
  return {"BERTC_CUBLAS", {"libcublas.so.13", "libcublas.so.12"}, {"nvidia/cu13/lib", "nvidia/cublas/lib"}, ""};
}

std::vector<support::LibraryCandidate> cublas_candidates() { return support::library_candidates(cublas_layout()); }

namespace {

using GetPropertyFn = int (*)(int, int*);  // cublasGetProperty(libraryPropertyType, int*)

// Why the driver cannot run `probe`'s cuBLAS, or "" when it can (or there is no driver to ask).
std::string driver_refuses(const CublasProbe& probe, int driver_version) {
  if (driver_version <= 0 || probe.major <= driver_version / 1000) return "";
  return fmt::format("cuBLAS {}.{} needs a CUDA {} driver, and this driver supports CUDA {}.{} (update the driver, "
                     "or install a cuBLAS of CUDA {}: pip install nvidia-cublas-cu{})",
                     probe.major, probe.minor, probe.major, driver_version / 1000, driver_version % 1000 / 10,
                     driver_version / 1000, driver_version / 1000);
}

}  // namespace

CublasProbe find_cublas(int driver_version) {
  CublasProbe probe;
  for (const support::LibraryCandidate& candidate : cublas_candidates()) {
    std::string error;
    auto lib = support::SharedLibrary::open(candidate.path, &error, support::SharedLibrary::Lifetime::Process);
    const auto get_property = lib.function<GetPropertyFn>("cublasGetProperty");
    if (lib.loaded() && (!lib.symbol("cublasCreate_v2") || !get_property))
      error = "lacks cublasCreate_v2 or cublasGetProperty (not cuBLAS?)";
    CublasProbe found;
    if (lib.loaded() && error.empty() &&
        (get_property(abi::kMajorVersion, &found.major) != 0 || get_property(abi::kMinorVersion, &found.minor) != 0))
      error = "cublasGetProperty did not say its version";
    if (lib.loaded() && error.empty()) error = driver_refuses(found, driver_version);
    if (lib.loaded() && error.empty()) {
      found.library = std::move(lib);
      found.origin = candidate.origin;
      found.tried = std::move(probe.tried);
      return found;
    }
    probe.tried.push_back(support::tried_text(candidate, error));
  }
  return probe;
}

std::string cublas_status_text(const CublasProbe& probe, int status) {
  using TextFn = const char* (*)(int);
  const auto name_of = probe.library.function<TextFn>("cublasGetStatusName");
  const auto text_of = probe.library.function<TextFn>("cublasGetStatusString");
  const char* name = name_of ? name_of(status) : nullptr;
  const char* text = text_of ? text_of(status) : nullptr;
  return fmt::format("{} ({}){}", name ? name : "cuBLAS status", status, text ? fmt::format(": {}", text) : "");
}

}  // namespace bertc::cuda
