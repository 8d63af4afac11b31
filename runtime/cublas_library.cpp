// Finding and loading cuBLAS (see cublas_library.h).
#include "runtime/cublas_library.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "codegen/nvrtc_library.h"

namespace bertc::runtime {

std::vector<std::string> cublas_candidates(const std::vector<std::string>& nvrtc_paths) {
  if (const char* forced = std::getenv("BERTC_CUBLAS"); forced && *forced) return {forced};
  const char* sonames[] = {"libcublas.so.13", "libcublas.so.12"};
  std::vector<std::string> out(std::begin(sonames), std::end(sonames));
  auto add = [&](const std::filesystem::path& folder) {
    for (const char* soname : sonames) {
      const std::string path = (folder / soname).lexically_normal().string();
      if (std::find(out.begin(), out.end(), path) == out.end()) out.push_back(path);
    }
  };
  for (const std::string& nvrtc : nvrtc_paths) {
    const std::filesystem::path folder = std::filesystem::path(nvrtc).parent_path();
    if (folder.empty()) continue;
    add(folder);
    if (folder.filename() == "lib" && folder.parent_path().filename() == "cuda_nvrtc") {
      const std::filesystem::path nvidia = folder.parent_path().parent_path();
      add(nvidia / "cublas" / "lib");
      add(nvidia / "cu13" / "lib");
    }
  }
  return out;
}

CublasProbe find_cublas() {
  std::vector<std::string> nvrtc_paths;
  for (const codegen::NvrtcProbe& p : codegen::probe_nvrtc_libraries())
    if (p.found) nvrtc_paths.push_back(p.found->library.path());
  CublasProbe probe;
  for (const std::string& candidate : cublas_candidates(nvrtc_paths)) {
    std::string error;
    auto lib = support::SharedLibrary::open(candidate, &error, support::SharedLibrary::Lifetime::Process);
    if (lib.loaded() && !lib.symbol("cublasCreate_v2")) error = lib.path() + " lacks cublasCreate_v2 (not cuBLAS?)";
    if (lib.loaded() && error.empty()) {
      probe.library = std::move(lib);
      return probe;
    }
    probe.tried.push_back(candidate + ": " + error);
  }
  return probe;
}

}  // namespace bertc::runtime
