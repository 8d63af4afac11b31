// Self-contained training executables (see training_executable.h).
#include "driver/training_executable.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include <fmt/format.h>

#include "support/atomic_file.h"
#include "support/file_errors.h"

namespace bertc::driver {
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

// Where a 64-bit ELF file's own bytes end (its section header table, which the linker writes
// last), or nullopt when it is not one: bytes after it were appended.
std::optional<uint64_t> elf_end(std::ifstream& in) {
  unsigned char header[64] = {};
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(header), sizeof header) || std::memcmp(header, "\x7f" "ELF", 4) != 0 ||
      header[4] != 2 /* 64-bit */)
    return std::nullopt;
  uint64_t section_headers = 0;
  uint16_t entry = 0, entries = 0;
  std::memcpy(&section_headers, header + 0x28, 8);
  std::memcpy(&entry, header + 0x3a, 2);
  std::memcpy(&entries, header + 0x3c, 2);
  return section_headers + uint64_t{entry} * entries;
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
  if (!support::non_regular_kind(path).empty()) return std::nullopt;  // (a pipe's open would wait for a writer)
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return std::nullopt;  // (no /proc: not Linux, nothing appended)
  const auto end = static_cast<uint64_t>(in.tellg());
  std::error_code ec;
  const std::string name = path == kSelf ? std::filesystem::read_symlink(kSelf, ec).string() : path.string();
  char trailer[kTrailerBytes] = {};
  if (end >= kTrailerBytes) {
    in.seekg(static_cast<std::streamoff>(end - kTrailerBytes));
    in.read(trailer, kTrailerBytes);
  }
  if (end < kTrailerBytes || !in || std::memcmp(trailer + 8, kTrailerMagic, 8) != 0) {
    // No trailer. bertc itself ends where its ELF image ends; a training executable cut short
    // (a partial copy) has its program's start there, without the trailer that finds it.
    in.clear();
    const std::optional<uint64_t> image = elf_end(in);
    char magic[6] = {};
    if (image && *image + sizeof magic <= end) {
      in.seekg(static_cast<std::streamoff>(*image));
      if (in.read(magic, sizeof magic) && std::memcmp(magic, "BERTCX", sizeof magic) == 0)
        throw std::runtime_error(fmt::format(
            "{}: a bertc training executable that is damaged or partly copied ({} bytes of a compiled program after "
            "bertc, but not the 16-byte trailer that ends a whole one): copy it again whole, or make it again with "
            "bertc compile CONFIG --arch sm_XX --executable -o NAME",
            name, end - *image));
    }
    return std::nullopt;
  }
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

}  // namespace bertc::driver
