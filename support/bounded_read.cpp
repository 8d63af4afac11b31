// Whole-input reads with a bound (see bounded_read.h).
#include "support/bounded_read.h"

#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

namespace bertc::support {

std::string read_bounded(const std::filesystem::path& path, uint64_t limit, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot be opened (does it exist?)", path.string()));
  std::string bytes;
  char block[1 << 16];
  while (in.read(block, sizeof block) || in.gcount() > 0) {
    bytes.append(block, static_cast<size_t>(in.gcount()));
    if (bytes.size() > limit) {
      std::error_code ec;
      const bool device = !std::filesystem::is_regular_file(path, ec);
      throw std::runtime_error(fmt::format("{}: more than {} MiB{}, more than {} holds: give {} instead", path.string(),
                                           limit >> 20, device ? " and no end (a device, or an endless pipe?)" : "",
                                           what, what));
    }
  }
  return bytes;
}

}  // namespace bertc::support
