// Text files and their lines (see text_input.h).
#include "data/text_input.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "data/vocab.h"

namespace bertc::data {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_text(const std::filesystem::path& p) {
  const std::string name = lower(p.filename().string());
  return name.ends_with(".txt") || name.ends_with(".txt.gz");
}

// Compressed, in a way bertc does not read as text (or gzip without .txt in its name): refused,
// not left out.
bool is_other_compressed(const std::filesystem::path& p) {
  const std::string ext = lower(p.extension().string());
  return ext == ".gz" || ext == ".bz2" || ext == ".xz" || ext == ".zst" || ext == ".zip" || ext == ".7z" ||
         ext == ".lz4";
}

// Whether a folder holds text files (one level): a folder of text inside the one given.
bool holds_text(const std::filesystem::path& folder) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(folder, ec))
    if (is_text(e.path())) return true;
  return false;
}

}  // namespace

std::string trim_line(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

std::vector<std::filesystem::path> text_files(const std::filesystem::path& input) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(input, ec)) return {input};
  if (!std::filesystem::is_directory(input, ec))
    throw DataError(fmt::format("{}: no such file or folder of training text (set [train] data, --data or --input)",
                                input.string()));
  std::vector<std::filesystem::path> files;
  // Every entry that looks like text is read or refused: none is left out without a word.
  for (const auto& e : std::filesystem::directory_iterator(input)) {
    if (is_other_compressed(e.path()) && !is_text(e.path()))
      throw DataError(fmt::format("{}: compressed, and bertc reads .txt and .txt.gz files: decompress it (or, gzip'd "
                                  "text, name it .txt.gz), or move it out of the folder",
                                  e.path().string()));
    if (e.is_directory(ec) && !is_text(e.path())) {
      if (holds_text(e.path()))
        throw DataError(fmt::format("{}: a folder of text inside {}: only the folder given is read, so its files would "
                                    "be left out: move them up into it, or give this folder instead",
                                    e.path().string(), input.string()));
      continue;
    }
    if (!is_text(e.path())) continue;
    if (!e.is_regular_file(ec))
      throw DataError(fmt::format("{}: named as text but not a file ({}): its text would be left out; move it out of "
                                  "the folder, or put the file back",
                                  e.path().string(), e.is_directory(ec) ? "a folder" : "a broken link or special file"));
    files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty())
    throw DataError(fmt::format("{}: the folder holds no training text (.txt or .txt.gz files; bertc train also reads "
                                "a folder of HDF5 shards, which bertc prepare-data makes)",
                                input.string()));
  return files;
}

LineReader::LineReader(const std::filesystem::path& path, size_t max_line, Note note, std::string longer_lines)
    : path_(path), file_(path, note), max_line_(max_line), note_(std::move(note)), longer_lines_(std::move(longer_lines)) {}

bool LineReader::fill() {
  if (at_ > 0) {
    buffer_.erase(0, at_);
    at_ = 0;
  }
  const size_t had = buffer_.size();
  buffer_.resize(had + (1 << 20));
  const size_t n = file_.read(buffer_.data() + had, 1 << 20);
  buffer_.resize(had + n);
  if (!started_ && n > 0) {
    started_ = true;
    if (starts_with_utf8_bom(buffer_)) buffer_.erase(0, 3);  // (Windows tools write one: not text of the file)
    head_ = buffer_.substr(0, 4096);
    refuse_not_text(path_, head_, figures_, file_.compressed());  // (a UTF-16 or UTF-32 byte-order mark: at once)
  }
  return n > 0;
}

void LineReader::check(const std::string& line) {
  const uint64_t before = figures_.bytes;
  figures_.add_line(line);
  // Refused from the first megabyte on: a large binary file is not read whole first.
  if (figures_.bytes >= (1u << 20) && (before >> 20) != (figures_.bytes >> 20))
    refuse_not_text(path_, head_, figures_, file_.compressed());
}

size_t LineReader::line_length(bool at_end) const {
  const char* begin = buffer_.data() + at_;
  const size_t available = buffer_.size() - at_;
  const auto* newline = static_cast<const char*>(std::memchr(begin, '\n', available));
  const size_t before_newline = newline ? static_cast<size_t>(newline - begin) : available;
  // A carriage return ends a line too (old Mac files), unless a line feed follows it (Windows').
  if (const auto* cr = static_cast<const char*>(std::memchr(begin, '\r', before_newline))) {
    const size_t at = static_cast<size_t>(cr - begin);
    if (at + 1 < available) return at + (begin[at + 1] == '\n' ? 2 : 1);
    return at_end ? at + 1 : 0;  // (what follows it is not read yet)
  }
  return newline ? before_newline + 1 : 0;
}

bool LineReader::next(std::string& line) {
  if (finished_) return false;
  for (;;) {
    if (const size_t length = line_length(false)) {
      line.assign(buffer_.data() + at_, length);
      at_ += length;
      check(line);
      return true;
    }
    if (buffer_.size() - at_ > max_line_)
      throw DataError(fmt::format("{}: line {} is over {} MiB: bertc reads text one sentence a line (is it text?): "
                                  "split it into lines{}",
                                  path_.string(), figures_.lines + 1, max_line_ >> 20,
                                  longer_lines_.empty() ? "" : ", " + longer_lines_));
    if (!fill()) {
      const size_t length = line_length(true);
      line.assign(buffer_, at_, length ? length : std::string::npos);
      at_ += line.size();
      if (!line.empty()) {
        check(line);
        return true;
      }
      finished_ = true;
      refuse_not_text(path_, head_, figures_, file_.compressed());
      if (note_)
        if (const auto said = not_text_note(path_, figures_)) note_(*said);
      return false;
    }
  }
}

}  // namespace bertc::data
