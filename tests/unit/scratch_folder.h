// A test process's own scratch folder, removed when it exits: ctest runs each test as a process,
// several at once, and a folder shared between them let one test's file be rewritten under
// another (which failed in CI).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace bertc::testing {

// `prefix`-PID under the temporary folder; removed at exit by the process that made it (a forked
// child's exit leaves it to its parent).
inline std::filesystem::path scratch_in(const std::string& prefix, const std::string& name) {
  struct Folder {
    pid_t owner = ::getpid();
    std::filesystem::path dir;
    ~Folder() {
      if (::getpid() != owner) return;
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  };
  static const Folder folder{::getpid(), std::filesystem::temp_directory_path() /
                                             (prefix + "-" + std::to_string(::getpid()))};
  std::filesystem::create_directories(folder.dir);
  return folder.dir / name;
}

}  // namespace bertc::testing
