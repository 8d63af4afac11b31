// What to do about a failed file operation, decided once by its errno: the advice every writer
// (checkpoints, shards, outputs) and the command line's last catch give.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

namespace bertc::support {

// A size as people read it: "412 KiB", "1.1 MiB", "2.35 GiB".
std::string size_text(uint64_t bytes);

// The fix for errno `error` met writing `path` (a file, or a folder to make), naming the part of
// the path to change: "" where none is known beyond the error itself. `needed`: the bytes the
// write wanted (0: not known), so that a full disk or quota says how much room to make.
std::string file_error_fix(int error, const std::filesystem::path& path, uint64_t needed = 0);

// A file operation that failed with errno `error` on `path`: what() is "WHAT: MESSAGE". `needed`:
// the bytes it wanted to write (0: not known).
class FileError : public std::system_error {
 public:
  FileError(int error, std::filesystem::path path, const std::string& what, uint64_t needed = 0)
      : std::system_error(error, std::generic_category(), what), path_(std::move(path)), needed_(needed) {}
  const std::filesystem::path& path() const { return path_; }
  uint64_t needed() const { return needed_; }

 private:
  std::filesystem::path path_;
  uint64_t needed_ = 0;
};

// What `path` is when it is there and not a regular file: "a pipe", "a device", "a socket", "a
// folder"; "" for a regular file or nothing. A reader of a file bertc names (a checkpoint, a
// compiled program) refuses these: opening a pipe nothing writes to waits for ever, a device is
// read without end.
std::string non_regular_kind(const std::filesystem::path& path);

// The bytes a .bertx starts with (codegen/bertx_file writes them; content_kind names a file by
// them).
inline constexpr char kBertxMagic[8] = {'B', 'E', 'R', 'T', 'C', 'X', '0', '1'};

// What a regular file is by its first bytes, where it is one of the kinds bertc makes or meets
// given where another is expected: "a compiled program (.bertx)", "an executable (a training
// executable of bertc compile --executable?)", "an HDF5 file (a shard folder's file of bertc
// prepare-data?)", "gzip-compressed data", "a zip archive (a PyTorch .bin?)"; "" for any other
// (a reader's own message then says what is wrong with it).
std::string content_kind(const std::filesystem::path& path);
// The same of a file's first bytes (at least 8 of them for a kind to be named).
std::string content_kind_of(std::string_view start);

// A std::filesystem error said plainly: "PATH: MESSAGE (while OPERATION)", and its fix.
std::string describe_file_error(const std::filesystem::filesystem_error& e);

}  // namespace bertc::support
