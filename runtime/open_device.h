// Opening the device a compiled program runs on, by the name users give it (--device).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "runtime/device.h"

namespace bertc::runtime {

struct OpenedDevice {
  std::shared_ptr<Device> device;
  int sm = 0;  // the arch its kernels are rendered for (0: sm_61's, the Host device's default)
};

// "host": the Host device (emulation) running the kernels of sm_`host_sm`; "cuda": GPU 0 at its
// own arch (throws saying why there is no usable GPU). Kernels compile under `cache`. Throws
// std::invalid_argument for any other name.
OpenedDevice open_device(const std::string& kind, int host_sm, const std::filesystem::path& cache);

// 80 for "sm_80"; 0 for anything that names no arch ("none", "auto").
int sm_of_arch(const std::string& arch);

}  // namespace bertc::runtime
