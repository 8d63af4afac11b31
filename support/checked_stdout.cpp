// std::cout over file descriptor 1 with its first write error kept (checked_stdout.h).
#include "support/checked_stdout.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <streambuf>
#include <vector>

#include <fmt/format.h>

#include "support/file_errors.h"

namespace bertc::support {

struct CheckedStdout::Buffer : std::streambuf {
  std::vector<char> bytes = std::vector<char>(1 << 16);
  int error = 0;         // the first failed write's errno, 0 while none failed
  uint64_t written = 0;  // bytes written before it

  Buffer() { setp(bytes.data(), bytes.data() + bytes.size()); }

  bool drain() {
    const char* at = pbase();
    size_t left = static_cast<size_t>(pptr() - pbase());
    while (left > 0 && error == 0) {
      const ssize_t n = ::write(STDOUT_FILENO, at, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error = n < 0 ? errno : EIO;
        break;
      }
      at += n, left -= static_cast<size_t>(n), written += static_cast<uint64_t>(n);
    }
    setp(bytes.data(), bytes.data() + bytes.size());
    return error == 0;
  }
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (c != traits_type::eof()) *pptr() = traits_type::to_char_type(c), pbump(1);
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }
};

CheckedStdout::CheckedStdout() : buffer_(std::make_unique<Buffer>()) { previous_ = std::cout.rdbuf(buffer_.get()); }

CheckedStdout::~CheckedStdout() {
  std::cout.flush();
  std::cout.rdbuf(previous_);
}

std::string CheckedStdout::finish() {
  std::cout.flush();
  const int error = buffer_->error;
  if (error == 0) return "";
  // (where the output went: the file behind descriptor 1, for the fix's "make room on ...")
  std::error_code ec;
  const std::filesystem::path target = std::filesystem::read_symlink("/proc/self/fd/1", ec);
  // (a pipe or socket reads "pipe:[N]": no name worth giving)
  const std::string where = ec || !target.is_absolute() ? "" : fmt::format(" ({})", target.string());
  if (error == EPIPE)
    return fmt::format("standard output{} is a pipe whose reader went away: the output was cut short after {} bytes; "
                       "read all of it, or write it to a file with -o where the command has one",
                       where, buffer_->written);
  // (a full disk's fix names the file's folder; a device, /dev/full say, has none to give)
  const bool file = !ec && std::filesystem::is_regular_file(target, ec);
  const std::string fix = file ? file_error_fix(error, target) : "";
  return fmt::format("writing standard output{} failed: {}: the output was cut short after {} bytes{}", where,
                     std::strerror(error), buffer_->written, fix.empty() ? "" : ": " + fix);
}

}  // namespace bertc::support
