// Standard output that remembers its first failed write: a command whose output went to a full
// disk or a closed pipe fails on it at its end, instead of exiting 0 with the output cut short.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace bertc::support {

// While one lives, std::cout writes straight to file descriptor 1 through a buffer that records
// the first write error (its errno) and drops what follows it; the destructor puts std::cout's
// own buffer back. One per process (the command line's), made before anything is printed.
class CheckedStdout {
 public:
  CheckedStdout();
  ~CheckedStdout();
  CheckedStdout(const CheckedStdout&) = delete;
  CheckedStdout& operator=(const CheckedStdout&) = delete;

  // Flushes std::cout; then "" when every byte was written, else what failed and its fix
  // ("writing standard output (FILE) failed: No space left on device: make room on ...").
  std::string finish();

 private:
  struct Buffer;
  std::unique_ptr<Buffer> buffer_;
  std::streambuf* previous_ = nullptr;
};

}  // namespace bertc::support
