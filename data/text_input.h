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

// Lines of a text file, plain or gzip (zlib reads both), with how far into the file it is.
class LineReader {
 public:
  explicit LineReader(const std::filesystem::path& path);  // throws DataError when it cannot open
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line (its newline kept), false at the end; throws DataError on a damaged .gz.
  bool next(std::string& line);
  // Bytes of the file consumed so far (compressed bytes for .gz).
  uint64_t offset();

 private:
  std::filesystem::path path_;
  gzFile file_;
};

}  // namespace bertc::data
