// Training text on disk: the files of an input (one file, or a folder's .txt and .txt.gz files in
// name order) and their lines, plain or gzip-compressed, read a buffer at a time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <zlib.h>

namespace bertc::data {

// Throws DataError naming the path when it is neither a file nor a folder holding text files.
std::vector<std::filesystem::path> text_files(const std::filesystem::path& input);

// A line without its surrounding spaces, tabs and line ends ("" for a blank line: a document's end).
std::string trim_line(const std::string& line);

// Lines of a text file, plain or gzip (zlib reads both; a .gz file must be gzip), with how far
// into the file it is. NUL bytes are kept as they are; a line longer than `max_line` bytes is an
// error (a file with no newlines would otherwise be read whole).
class LineReader {
 public:
  // Throws DataError when it cannot open, or a .gz file is not gzip.
  explicit LineReader(const std::filesystem::path& path, size_t max_line = size_t{64} << 20);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line (its newline kept), false at the end; throws DataError on a damaged .gz.
  bool next(std::string& line);
  // Bytes of the file consumed so far (compressed bytes for .gz).
  uint64_t offset();

 private:
  bool fill();  // more bytes into buffer_; false at the end
  std::filesystem::path path_;
  gzFile file_;
  size_t max_line_;
  std::string buffer_;
  size_t at_ = 0;
};

}  // namespace bertc::data
