// support::CheckedStdout: output to a full device, a full file system or a pipe nobody reads is
// reported by finish() (it was lost silently, exit 0), and output that all arrived is not.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>

#include <gtest/gtest.h>

#include "support/checked_stdout.h"

namespace bertc::support {
namespace {

// Runs `write` with file descriptor 1 being `fd` (restored after), and returns finish()'s words.
std::string finish_with_stdout_on(int fd, const std::function<void()>& write) {
  std::cout.flush();
  const int saved = ::dup(STDOUT_FILENO);
  ::dup2(fd, STDOUT_FILENO);
  std::string said;
  {
    CheckedStdout out;
    write();
    said = out.finish();
  }
  std::cout.clear();
  ::dup2(saved, STDOUT_FILENO);
  ::close(saved);
  return said;
}

TEST(CheckedStdout, OutputThatArrivedIsNotReported) {
  const std::filesystem::path file = std::filesystem::temp_directory_path() / "bertc-checked-stdout.txt";
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  const std::string text(200000, 'x');  // (several buffers' worth)
  EXPECT_EQ(finish_with_stdout_on(fd, [&] { std::cout << text; }), "");
  ::close(fd);
  EXPECT_EQ(std::filesystem::file_size(file), text.size());
  std::filesystem::remove(file);
}

TEST(CheckedStdout, AFullDeviceIsReported) {
  const int fd = ::open("/dev/full", O_WRONLY);
  ASSERT_GE(fd, 0);
  const std::string said = finish_with_stdout_on(fd, [] { std::cout << "graph @x {}\n"; });
  ::close(fd);
  EXPECT_NE(said.find("writing standard output (/dev/full) failed: No space left on device: the output was cut "
                      "short after 0 bytes"),
            std::string::npos)
      << said;
}

TEST(CheckedStdout, APipeWhoseReaderWentAwayIsReported) {
  int ends[2];
  ASSERT_EQ(::pipe(ends), 0);
  ::close(ends[0]);  // (nobody will read)
  const auto before = std::signal(SIGPIPE, SIG_IGN);
  const std::string said = finish_with_stdout_on(ends[1], [] { std::cout << "loss 1.0\n"; });
  std::signal(SIGPIPE, before);
  ::close(ends[1]);
  EXPECT_NE(said.find("standard output is a pipe whose reader went away: the output was cut short after 0 bytes"),
            std::string::npos)
      << said;
}

}  // namespace
}  // namespace bertc::support
