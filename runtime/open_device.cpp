// Opening devices by name (see open_device.h).
#include "runtime/open_device.h"

#include <stdexcept>

#include "runtime/cuda_device.h"
#include "runtime/host_device.h"

namespace bertc::runtime {

OpenedDevice open_device(const std::string& kind, int host_sm, const std::filesystem::path& cache) {
  if (kind == "host") return {std::make_shared<HostDevice>(cache), host_sm};
  if (kind == "cuda") {
    auto gpu = std::make_shared<CudaDevice>(0, cache);
    const int sm = gpu->arch();
    return {std::move(gpu), sm};
  }
  throw std::invalid_argument("no device '" + kind + "': host or cuda");
}

int sm_of_arch(const std::string& arch) { return arch.rfind("sm_", 0) == 0 ? std::stoi(arch.substr(3)) : 0; }

}  // namespace bertc::runtime
