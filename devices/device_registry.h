// The devices a compiled program runs on, by the name users give them (--device host|ptx|cuda): the
// one table of device kinds. A new device is its file pair (a runtime::Device subclass: runtime/'s
// Host device, cuda/'s PTX and CUDA devices) and one line in device_registry.cpp's table.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "runtime/device.h"

namespace bertc::devices {

using runtime::Device;
using runtime::DeviceRequest;

// What probing finds of a device kind on this machine.
struct DeviceProbe {
  bool usable = false;
  std::string found;  // "NVIDIA H200 (sm_90)", or why there is none ("no CUDA driver (...)")
};

struct DeviceKind {
  std::string_view name;         // what --device takes
  std::string_view description;  // one line: what runs where
  // Said when it is opened, until it has been validated on real hardware ("" when it has been).
  std::string_view caveat;
  // --device auto may choose it when the probe finds it usable.
  bool chosen_automatically;
  // Its devices offer EmulatorControls (emulator_controls()): bertc check's --sample-blocks,
  // --schedule-seed, --resident-blocks and --approx apply to it.
  bool emulator_controls;
  // Throws std::runtime_error saying why it is not usable and what to do instead.
  std::shared_ptr<Device> (*open)(const DeviceRequest& request);
  // Looks for it without opening it (never throws); null: always usable.
  DeviceProbe (*probe)();
};

std::span<const DeviceKind> device_kinds();
// Throws std::invalid_argument listing the names for an unknown one.
const DeviceKind& device_kind(std::string_view name);
// Opens device `name` (device_kind(name).open).
std::shared_ptr<Device> open_device(std::string_view name, const DeviceRequest& request);

}  // namespace bertc::devices
