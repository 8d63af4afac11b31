// Choosing the device a command runs on (see device_choice.h).
#include "driver/device_choice.h"

#include <iostream>
#include <stdexcept>

#include <fmt/format.h>

#include "devices/device_registry.h"

namespace bertc::driver {

std::vector<std::string> device_names(std::vector<std::string> first) {
  for (const devices::DeviceKind& kind : devices::device_kinds()) first.emplace_back(kind.name);
  return first;
}

std::string devices_help() {
  std::vector<std::string> parts;
  for (const devices::DeviceKind& kind : devices::device_kinds())
    parts.push_back(fmt::format("{} ({})", kind.name, kind.description));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::optional<std::string> choose_device(const std::string& requested) {
  if (requested == "cpu") {
    std::cerr << "device: CPU reference executor (--device cpu)\n";
    return std::nullopt;
  }
  if (requested != "auto") {
    const devices::DeviceKind& kind = devices::device_kind(requested);
    std::cerr << fmt::format("device: {} (--device {}{}{})\n", kind.description, kind.name,
                             kind.caveat.empty() ? "" : "; ", kind.caveat);
    return requested;
  }
  std::vector<std::string> found;
  for (const devices::DeviceKind& kind : devices::device_kinds()) {
    if (!kind.probe) continue;  // always usable, never chosen for you (the host emulation)
    const devices::DeviceProbe probe = kind.probe();
    if (probe.usable && kind.chosen_automatically) {
      std::cerr << fmt::format("device: {} (--device auto: {}{}{})\n", probe.found, kind.name,
                               kind.caveat.empty() ? "" : "; ", kind.caveat);
      return std::string(kind.name);
    }
    found.push_back(probe.usable ? fmt::format("found {}, but {} (--device {} tries it)", probe.found, kind.caveat, kind.name)
                                 : fmt::format("no usable {} device ({})", kind.name, probe.found));
  }
  std::cerr << fmt::format("device: {}; training on the CPU reference executor\n", fmt::join(found, "; "));
  return std::nullopt;
}

std::string choose_device_for_compiled(const std::string& requested, const std::string& source) {
  if (requested != "auto") return *choose_device(requested);  // (cpu was refused before)
  std::vector<std::string> found;
  for (const devices::DeviceKind& kind : devices::device_kinds()) {
    if (!kind.probe || !kind.chosen_automatically) continue;
    const devices::DeviceProbe probe = kind.probe();
    if (probe.usable) {
      std::cerr << fmt::format("device: {} (--device auto: {}, for a compiled program{}{})\n", probe.found, kind.name,
                               kind.caveat.empty() ? "" : "; ", kind.caveat);
      return std::string(kind.name);
    }
    found.push_back(probe.found);
  }
  throw std::invalid_argument(fmt::format("{}: a compiled program runs its kernels on a GPU, and there is none ({}): "
                                          "run it where there is one, or give --device host (the emulation, slow)",
                                          source, fmt::join(found, "; ")));
}

void require_precision_computed(passes::Precision precision, const std::optional<std::string>& device,
                                const std::string& command) {
  if (precision != passes::Precision::Tf32 || device) return;
  throw std::invalid_argument(fmt::format(
      "precision tf32 rounds the matrix products' inputs to TF32 in the compiled kernels, and the CPU reference runs "
      "the IR, whose products stay fp32: its numbers would be fp32's, said as tf32's; {} with --device host (the "
      "kernels under emulation, TF32's rounding included) or a GPU of sm_80 or newer, or with --precision fp32",
      command));
}

}  // namespace bertc::driver
