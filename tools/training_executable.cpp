// Self-contained training executables (see training_executable.h).
#include "tools/training_executable.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include <fmt/format.h>

#include "support/atomic_file.h"

namespace bertc::tools {
namespace {

// After the program: its size (8 bytes, little-endian) and this magic, so that an executable is
// told from bertc by its last 16 bytes.
constexpr char kTrailerMagic[8] = {'B', 'E', 'R', 'T', 'C', 'E', 'X', '1'};
constexpr size_t kTrailerBytes = 16;

const std::filesystem::path kSelf = "/proc/self/exe";

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot be read", path.string()));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The running executable without any program appended to it (an executable made from an
// executable carries one program, the newer).
// In bertc's own binary (this file's code reads it): how a copy of /proc/self/exe is known to be
// bertc, not the loader or valgrind that runs it.
constexpr std::string_view kSelfMarker = "bertc-runtime-for-training-executables";

std::string bare_self() {
  std::string self = read_file(kSelf);
  if (self.find(kSelfMarker) == std::string::npos) {
    std::error_code ec;
    throw std::runtime_error(fmt::format("{} is {}, not bertc (run through a loader or valgrind?): a training "
                                         "executable is a copy of bertc itself, so run bertc directly to write one",
                                         kSelf.string(), std::filesystem::read_symlink(kSelf, ec).string()));
  }
  if (self.size() >= kTrailerBytes && std::memcmp(self.data() + self.size() - 8, kTrailerMagic, 8) == 0) {
    uint64_t size = 0;
    std::memcpy(&size, self.data() + self.size() - kTrailerBytes, 8);
    if (size <= self.size() - kTrailerBytes) self.resize(self.size() - kTrailerBytes - size);
  }
  return self;
}

}  // namespace

void write_training_executable(const std::filesystem::path& path, std::string_view bertx) {
  std::string bytes = bare_self();
  bytes.append(bertx);
  const uint64_t size = bertx.size();
  bytes.append(reinterpret_cast<const char*>(&size), 8);
  bytes.append(kTrailerMagic, 8);
  support::write_file_atomically(path, bytes, /*executable=*/true);
}

std::optional<std::string> embedded_program(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return std::nullopt;  // (no /proc: not Linux, nothing appended)
  const auto end = static_cast<uint64_t>(in.tellg());
  if (end < kTrailerBytes) return std::nullopt;
  char trailer[kTrailerBytes];
  in.seekg(static_cast<std::streamoff>(end - kTrailerBytes));
  if (!in.read(trailer, kTrailerBytes) || std::memcmp(trailer + 8, kTrailerMagic, 8) != 0) return std::nullopt;
  const std::string name = path == kSelf ? "this executable" : path.string();
  uint64_t size = 0;
  std::memcpy(&size, trailer, 8);
  if (size > end - kTrailerBytes)
    throw std::runtime_error(fmt::format("{}: its compiled program is cut short (a damaged or partly copied file): make "
                                         "it again with bertc compile CONFIG --arch sm_XX --executable -o FILE",
                                         name));
  std::string bertx(size, '\0');
  in.seekg(static_cast<std::streamoff>(end - kTrailerBytes - size));
  if (!in.read(bertx.data(), static_cast<std::streamsize>(size)))
    throw std::runtime_error(fmt::format("{}: its compiled program cannot be read", name));
  return bertx;
}

}  // namespace bertc::tools
