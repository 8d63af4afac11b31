// What every device shares (see device.h): the words for a recorded graph's census, and where
// its launches' counts are by default.
#include "runtime/device.h"

#include <stdexcept>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/emulator_controls.h"

namespace bertc::runtime {

std::string GraphCensus::describe() const {
  std::vector<std::string> parts;
  auto add = [&](int64_t n, const char* one, const char* many) {
    if (n > 0) parts.push_back(fmt::format("{} {}", n, n == 1 ? one : many));
  };
  add(kernels, "kernel", "kernels");
  add(copies, "copy", "copies");
  add(sets, "set", "sets");
  add(host_calls, "host call", "host calls");
  add(other, "other", "other");
  return fmt::format("{} node{}{}{}", nodes(), nodes() == 1 ? "" : "s", parts.empty() ? "" : ": ",
                     fmt::join(parts, ", "));
}

// A caller that asked capabilities().in_run_sums never reaches these on a device without them.
void Device::issue_host_call(std::function<void()> /*work*/) {
  throw std::logic_error(fmt::format("the {} device runs no host calls among its launches", name()));
}

CollectiveOpening Device::open_collective(distributed::Communicator& /*comm*/, double /*timeout_seconds*/) {
  throw std::logic_error(fmt::format("the {} device makes no sums among its launches", name()));
}

CountedLaunches* Device::counted_launches() { return emulator_controls(); }

}  // namespace bertc::runtime
