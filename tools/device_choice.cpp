// Choosing the device a command runs on (see device_choice.h).
#include "tools/device_choice.h"

#include <iostream>

#include <fmt/format.h>

#include "runtime/device_registry.h"

namespace bertc::tools {

std::vector<std::string> device_names(std::vector<std::string> first) {
  for (const runtime::DeviceKind& kind : runtime::device_kinds()) first.emplace_back(kind.name);
  return first;
}

std::string devices_help() {
  std::vector<std::string> parts;
  for (const runtime::DeviceKind& kind : runtime::device_kinds())
    parts.push_back(fmt::format("{} ({})", kind.name, kind.description));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::optional<std::string> choose_device(const std::string& requested) {
  if (requested == "cpu") {
    std::cerr << "device: CPU reference executor (--device cpu)\n";
    return std::nullopt;
  }
  if (requested != "auto") {
    const runtime::DeviceKind& kind = runtime::device_kind(requested);
    std::cerr << fmt::format("device: {} (--device {}{}{})\n", kind.description, kind.name,
                             kind.caveat.empty() ? "" : "; ", kind.caveat);
    return requested;
  }
  std::vector<std::string> found;
  for (const runtime::DeviceKind& kind : runtime::device_kinds()) {
    if (!kind.probe) continue;  // always usable, never chosen for you (the host emulation)
    const runtime::DeviceProbe probe = kind.probe();
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

}  // namespace bertc::tools
