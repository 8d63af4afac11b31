// Whole-input reads with a bound (see bounded_read.h).
#include "support/bounded_read.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

#include <fmt/format.h>

namespace bertc::support {

std::string read_bounded(const std::filesystem::path& path, uint64_t limit, std::string_view what) {
  // Opened without waiting: a named pipe nothing writes to would hold open() for ever (a pipe
  // being written, as <(...) gives, reads as before; one nothing writes to reads as empty).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(fmt::format("{}: cannot be opened (does it exist?)", path.string()));
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::string bytes;
  char block[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, block, sizeof block);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    bytes.append(block, static_cast<size_t>(n));
    if (bytes.size() > limit) {
      std::error_code ec;
      const bool device = !std::filesystem::is_regular_file(path, ec);
      ::close(fd);
      throw std::runtime_error(fmt::format("{}: more than {} MiB{}, more than {} holds: give {} instead", path.string(),
                                           limit >> 20, device ? " and no end (a device, or an endless pipe?)" : "",
                                           what, what));
    }
  }
  ::close(fd);
  std::error_code ec;
  if (bytes.empty() && std::filesystem::status(path, ec).type() == std::filesystem::file_type::fifo)
    throw std::runtime_error(fmt::format("{}: a pipe nothing wrote to (when bertc read it): give {} itself",
                                         path.string(), what));
  return bytes;
}

}  // namespace bertc::support
