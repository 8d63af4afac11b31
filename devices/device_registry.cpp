// The table of devices (see device_registry.h).
#include "devices/device_registry.h"

#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "cuda/cuda_device.h"
#include "cuda/cuda_driver.h"
#include "runtime/host_device.h"
#include "cuda/ptx_device.h"

namespace bertc::devices {
namespace {

DeviceProbe probe_cuda() {
  const cuda::CudaDriverProbe p = cuda::probe_cuda_driver();
  if (p.devices.empty()) return {false, p.error};
  return {true, fmt::format("{} (sm_{})", p.devices[0].name, p.devices[0].arch)};
}

const DeviceKind kDevices[] = {
    {"host", "the compiled plan's kernels under host emulation",
     "slow: it checks the GPU runtime's plan on the CPU", false, false,
     [](const DeviceRequest& r) -> std::shared_ptr<Device> { return std::make_shared<runtime::HostDevice>(r.kernel_cache, r.sm); },
     nullptr},
    {"ptx", "the compiled plan's kernels as NVRTC's PTX for the arch, run on the PTX emulator with compute-sanitizer's "
            "checks",
     "very slow: every thread's every instruction is interpreted; a check of the exact PTX, never a GPU figure", false,
     true,
     [](const DeviceRequest& r) -> std::shared_ptr<Device> { return std::make_shared<cuda::PtxDevice>(r.kernel_cache, r.sm); },
     nullptr},
    {"cuda", "GPU 0 through the CUDA driver API and cuBLAS (both dlopen'ed), CUDA Graphs",
     "run on one H200 so far (tests/gpu/run.sh): not yet on a P40, a V100 or two GPUs", true, false,
     [](const DeviceRequest& r) -> std::shared_ptr<Device> { return std::make_shared<cuda::CudaDevice>(r); },
     probe_cuda},
};

}  // namespace

std::span<const DeviceKind> device_kinds() { return kDevices; }

const DeviceKind& device_kind(std::string_view name) {
  std::vector<std::string_view> names;
  for (const DeviceKind& k : kDevices) {
    if (k.name == name) return k;
    names.push_back(k.name);
  }
  throw std::invalid_argument(fmt::format("no device '{}' (devices: {})", name, fmt::join(names, ", ")));
}

std::shared_ptr<Device> open_device(std::string_view name, const DeviceRequest& request) {
  return device_kind(name).open(request);
}

}  // namespace bertc::devices
