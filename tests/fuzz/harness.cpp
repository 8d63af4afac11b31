// The fuzz harnesses' shared checks and scratch files (harness.h).
#include "tests/fuzz/harness.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace bertc::fuzz {

size_t accepted_inputs = 0;

void fail(const std::string& reader, const std::string& defect) {
  std::fprintf(stderr, "FUZZ FAILURE in the %s reader: %s\n", reader.c_str(), defect.c_str());
  std::abort();
}

namespace {

// The process's scratch folder, removed at a normal exit (a crash leaves it, beside its report).
struct ScratchFolder {
  std::filesystem::path path;
  ScratchFolder() {
    // Memory where there is a tmpfs: readers that write (the metrics file, atomically) sync it.
    const char* tmp = std::getenv("TMPDIR");
    const std::filesystem::path base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : tmp && *tmp ? tmp : "/tmp";
    path = base / ("bertc-fuzz-" + std::to_string(getpid()));
    std::filesystem::create_directories(path);
  }
  ~ScratchFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

std::filesystem::path scratch_file(std::string_view bytes, const std::string& name) {
  static const ScratchFolder folder;
  const std::filesystem::path path = folder.path / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out.flush()) fail(name, "the scratch file " + path.string() + " cannot be written (disk full?)");
  return path;
}

void put_u64(std::string& bytes, size_t at, uint64_t value) {
  if (at + 8 > bytes.size()) return;
  std::memcpy(bytes.data() + at, &value, 8);
}

}  // namespace bertc::fuzz
