// The devices a compiled program runs on, by the name users give them (--device host|cuda). A new
// device is its file pair (a Device subclass) and one line in device_registry.cpp's table.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "runtime/device.h"

namespace bertc::runtime {

// What opening a device needs.
struct DeviceRequest {
  // The arch whose kernels the device runs: for the Host device, any (0: sm_61's); for a GPU, its
  // own (0) or an older one's, as PTX (--arch sm_61 on a newer GPU checks a P40's program there).
  int sm = 0;
  std::filesystem::path kernel_cache;  // where kernels compile
  int ordinal = 0;                     // which GPU of the machine (a data-parallel rank's local rank)
  // What the caller's user can do instead, said after the cause when the device cannot run the
  // work: there is no such device here; or its GPU is older than the program's arch (a "{}" in it
  // is the GPU's arch number). Each command knows its own ways (a .bertx cannot fall back to the
  // CPU reference; a config can).
  std::string instead = "run where that device is";
  std::string older_gpu = "compile for this GPU (--arch sm_{})";
};

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

}  // namespace bertc::runtime
