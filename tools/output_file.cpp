// Atomic file output: write a temporary beside the target, fsync, rename over it.
#include "tools/output_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <stdexcept>

namespace bertc::tools {

void write_output(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    std::cout << text << std::flush;
    return;
  }
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  auto fail = [&](const std::string& what) {
    const std::string reason = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write " + path + ": " + what + ": " + reason);
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) fail("open");
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) { ::close(fd); fail("write"); }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) { ::close(fd); fail("fsync"); }
  if (::close(fd) != 0) fail("close");
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("rename");
}

}  // namespace bertc::tools
