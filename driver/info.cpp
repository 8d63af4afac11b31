// bertc info (see info.h).
#include "driver/info.h"

#include <filesystem>
#include <iostream>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "cuda/nvrtc_library.h"
#include "distributed/communicator.h"
#include "distributed/gloo_communicator.h"
#include "cuda/nccl_library.h"
#include "driver/compiled_program.h"
#include "driver/file_info.h"
#include "driver/report.h"
#include "cuda/cublas_library.h"
#include "cuda/cuda_driver.h"
#include "support/file_errors.h"

namespace bertc::driver {

int info(bool json, const std::string& path, const frontend::ModelDefinition& model) {
  if (!path.empty()) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      describe_folder(path, json, std::cout);
      return 0;
    }
    if (const std::string kind = support::non_regular_kind(path); !kind.empty())
      throw std::invalid_argument(fmt::format("{}: {}, not a .bertx or a training executable: give the file itself",
                                              path, kind));
    const std::optional<codegen::CompiledProgram> p = compiled_program_in(path);
    if (!p) {
      describe_safetensors(path, json, std::cout);
      return 0;
    }
    std::cout << (json ? bertx_json(*p).dump(2) + "\n" : bertx_text(*p, path));
    return 0;
  }
  const cuda::CudaDriverProbe driver = cuda::probe_cuda_driver();
  auto j = info_json(driver, cuda::probe_nvrtc_libraries(), cuda::find_cublas(driver.version));
  const distributed::Launch launch = distributed::detect_launch();
  j["mpi"] = {{"built", !distributed::mpi_library_version().empty()}, {"version", distributed::mpi_library_version()},
              {"launcher", launch.launcher.empty() ? "none" : launch.launcher}, {"rank", launch.rank},
              {"ranks", launch.size}};
  j["gloo"] = {{"built", !distributed::gloo_library_version().empty()}, {"version", distributed::gloo_library_version()}};
  const cuda::NcclProbe nccl = cuda::find_nccl();
  j["nccl"] = {{"found", nccl.library.loaded()}, {"path", nccl.library.path()}, {"origin", nccl.origin},
               {"version", nccl.library.loaded() ? cuda::nccl_version_text(nccl.version) : ""}, {"tried", nccl.tried}};
  j["model"] = model.name;
  std::cout << (json ? j.dump(2) + "\n" : fmt::format("model        {}: {}\n", model.name, model.description) + info_text(j));
  return 0;
}

}  // namespace bertc::driver
