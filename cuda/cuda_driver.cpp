// CUDA driver probe through dlopen; only the few entry points needed to list GPUs.
#include "cuda/cuda_driver.h"

#include <cstdlib>

#include <fmt/format.h>

#include "cuda/vendor_abi.h"
#include "support/shared_library.h"

namespace bertc::cuda {

namespace {

using namespace abi;  // (cuda.h's device attributes by number, cuda/vendor_abi.h)

using InitFn = int (*)(unsigned);
using IntOutFn = int (*)(int*);
using DeviceGetFn = int (*)(int*, int);
using NameFn = int (*)(char*, int, int);
using AttrFn = int (*)(int*, int, int);
using TotalMemFn = int (*)(size_t*, int);

}  // namespace

support::SharedLibrary open_cuda_driver(std::string* error) {
  const char* chosen = std::getenv("BERTC_CUDA_DRIVER");
  const std::string path = chosen && *chosen ? chosen : "libcuda.so.1";
  support::SharedLibrary lib = support::SharedLibrary::open(path, error, support::SharedLibrary::Lifetime::Process);
  if (!lib.loaded() && chosen && *chosen) *error = fmt::format("BERTC_CUDA_DRIVER={}: {}", chosen, *error);
  return lib;
}

CudaDriverProbe probe_cuda_driver() {
  CudaDriverProbe probe;
  auto lib = open_cuda_driver(&probe.error);
  if (!lib.loaded()) {
    probe.error = "no CUDA driver (" + probe.error + ")";
    return probe;
  }
  probe.loaded = true;
  probe.path = lib.path();
  auto init = lib.function<InitFn>("cuInit");
  auto driver_version = lib.function<IntOutFn>("cuDriverGetVersion");
  auto count = lib.function<IntOutFn>("cuDeviceGetCount");
  auto get = lib.function<DeviceGetFn>("cuDeviceGet");
  auto name = lib.function<NameFn>("cuDeviceGetName");
  auto attr = lib.function<AttrFn>("cuDeviceGetAttribute");
  auto total = lib.function<TotalMemFn>("cuDeviceTotalMem_v2");
  if (!init || !driver_version || !count || !get || !name || !attr || !total) {
    probe.error = probe.path + " lacks driver API entry points (not a CUDA driver?)";
    return probe;
  }
  driver_version(&probe.version);
  if (int rc = init(0); rc != 0) {
    probe.error = fmt::format("cuInit failed with CUresult {} (is the GPU visible to this process?)", rc);
    return probe;
  }
  int n = 0;
  count(&n);
  for (int i = 0; i < n; ++i) {
    int dev = 0;
    if (get(&dev, i) != 0) continue;
    CudaDeviceInfo info;
    info.ordinal = i;
    char buf[256] = {};
    name(buf, sizeof buf - 1, dev);
    info.name = buf;
    int major = 0, minor = 0;
    attr(&major, kAttrComputeCapabilityMajor, dev);
    attr(&minor, kAttrComputeCapabilityMinor, dev);
    attr(&info.multiprocessors, kAttrMultiprocessorCount, dev);
    info.arch = major * 10 + minor;
    size_t bytes = 0;
    total(&bytes, dev);
    info.memory_bytes = static_cast<int64_t>(bytes);
    probe.devices.push_back(info);
  }
  if (probe.devices.empty()) probe.error = "the CUDA driver sees no GPU";
  return probe;
}

}  // namespace bertc::cuda
