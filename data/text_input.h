// Training text on disk: the files of an input (one file, or a folder's .txt and .txt.gz files in
// name order) and their lines, plain or gzip-compressed (data/gzip_reader.h), read a buffer at a
// time and checked to be text (data/text_check.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "data/gzip_reader.h"
#include "data/text_check.h"

namespace bertc::data {

// Throws DataError naming the path when it is neither a file nor a folder holding text files, for
// an entry of the folder named as text (.txt, .txt.gz) that is not a file (a folder, a broken
// link), and for a compressed file bertc does not read, by its name or its first bytes (a .tgz, a
// .gz.part, xz named .lzma): each would be left out without a word. Other files are left out and
// said to `note` (may be empty), with how many and the first few names. `flag`: the command's
// flag that gives the path ("--data" of train and batch, "--input" of prepare-data and vocab),
// which the refusal of a path that is not there names.
std::vector<std::filesystem::path> text_files(const std::filesystem::path& input,
                                              const std::function<void(const std::string&)>& note = {},
                                              std::string_view flag = "--data");

// A file of `folder` (one level) named as text (.txt, .txt.gz, in any case), or nullopt: a folder
// of text inside the one given, or text where shards would go.
// `except`: a file name (in lower case) not counted (a file of bertc's own there, stages.txt).
std::optional<std::filesystem::path> text_file_in(const std::filesystem::path& folder, const std::string& except = "");

// A line without the whitespace around it as Python's str.strip() takes it off (spaces, tabs, line
// ends, no-break and ideographic spaces, form feeds...: what BERT's create_pretraining_data.py
// strips before it takes an empty line as a document's end); "" for a blank line.
std::string trim_line(const std::string& line);

// Lines of a text file, plain or gzip, with how far into the file it is; a line ends at \n, \r\n
// or a lone \r (a file saved by an old Mac editor is lines, not one). A UTF-8 byte-order mark
// at its start is skipped; NUL bytes are kept as they are; a line longer than `max_line` bytes is
// an error (a file with no newlines would otherwise be read whole).
class LineReader {
 public:
  using Note = std::function<void(const std::string&)>;
  // Throws DataError when it cannot open, or a .gz file is not gzip. `note` (may be empty) hears
  // what is read but worth saying: bytes that are not text, bytes after a gzip stream.
  // `longer_lines`: how a caller lets lines be longer than max_line, said when one is.
  explicit LineReader(const std::filesystem::path& path, size_t max_line = size_t{64} << 20, Note note = {},
                      std::string longer_lines = "");

  // The next line (its newline kept), false at the end. Throws DataError on a damaged or cut-short
  // .gz, and for a file that is not text (refuse_not_text: checked from its first megabyte on).
  bool next(std::string& line);
  // Bytes of the file consumed so far (compressed bytes for .gz).
  uint64_t offset() const { return file_.offset(); }
  const TextFigures& figures() const { return figures_; }

 private:
  bool fill();  // more bytes into buffer_; false at the end
  // Bytes of the next whole line in buffer_ with its end (\n, \r\n or a lone \r), or 0 when it
  // needs more bytes; `at_end`: there are no more, so a final \r ends a line.
  size_t line_length(bool at_end) const;
  void check(const std::string& line);
  std::filesystem::path path_;
  GzipReader file_;
  size_t max_line_;
  Note note_;
  std::string longer_lines_;
  std::string buffer_, head_;  // head_: the file's first bytes, for naming another encoding
  size_t at_ = 0;
  bool started_ = false, finished_ = false;
  TextFigures figures_;
};

// The files of a text input as they are read, one after another: a file whose text another of
// them held already (a link to it, or the same text compressed) is refused, as it would be
// trained twice; a file with no text (zero bytes, an empty .gz) is said, not left out silently.
class FileTexts {
 public:
  void line(std::string_view text);  // a line of the file being read
  // The file read ends: DataError naming both files for a repeat; `note` hears of an empty one.
  void end(const std::filesystem::path& file, const std::function<void(const std::string&)>& note);

 private:
  uint64_t hash_ = 0;
  bool any_ = false;
  std::vector<std::pair<uint64_t, std::filesystem::path>> seen_;
};

}  // namespace bertc::data
