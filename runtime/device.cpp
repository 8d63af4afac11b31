// What every device shares (see device.h): the words for a recorded graph's census.
#include "runtime/device.h"

#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

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

}  // namespace bertc::runtime
