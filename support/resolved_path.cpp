// Paths resolved for comparison (see resolved_path.h).
#include "support/resolved_path.h"

#include <algorithm>

namespace bertc::support {

std::filesystem::path resolved_path(const std::filesystem::path& path) {
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  if (ec) return path.lexically_normal();
  const std::filesystem::path resolved = std::filesystem::weakly_canonical(absolute, ec);
  return ec ? absolute.lexically_normal() : resolved;
}

bool is_within(const std::filesystem::path& path, const std::filesystem::path& folder) {
  return !folder.empty() && std::mismatch(folder.begin(), folder.end(), path.begin(), path.end()).first == folder.end();
}

}  // namespace bertc::support
