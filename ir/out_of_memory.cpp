// The out-of-memory error's message (see out_of_memory.h).
#include "ir/out_of_memory.h"

#include <fmt/format.h>

namespace bertc::ir {

std::string readable_bytes(size_t bytes) {
  const auto b = static_cast<double>(bytes);
  if (bytes >= (size_t{1} << 30)) return fmt::format("{:.1f} GiB", b / (1 << 30));
  if (bytes >= (size_t{1} << 20)) return fmt::format("{:.1f} MiB", b / (1 << 20));
  if (bytes >= 1024) return fmt::format("{:.1f} KiB", b / 1024);
  return fmt::format("{} bytes", bytes);
}

OutOfMemory::OutOfMemory(std::string_view memory, std::string_view what, size_t bytes, std::string_view where)
    : std::runtime_error(fmt::format("out of {} memory allocating {} for {}{}", memory, readable_bytes(bytes), what,
                                     where.empty() ? std::string() : fmt::format(" on {}", where))),
      bytes_(bytes) {}

}  // namespace bertc::ir
