// Text files and their lines (see text_input.h).
#include "data/text_input.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "data/vocab.h"

namespace bertc::data {
namespace {

bool is_text(const std::filesystem::path& p) {
  const std::string name = p.filename().string();
  return name.ends_with(".txt") || name.ends_with(".txt.gz");
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
  for (const auto& e : std::filesystem::directory_iterator(input))
    if (e.is_regular_file() && is_text(e.path())) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw DataError(fmt::format("{}: the folder holds no .txt or .txt.gz files", input.string()));
  return files;
}

LineReader::LineReader(const std::filesystem::path& path, size_t max_line)
    : path_(path), file_(gzopen(path.c_str(), "rb")), max_line_(max_line) {
  if (!file_) throw DataError(fmt::format("{}: cannot open", path.string()));
  gzbuffer(file_, 1 << 20);
  // zlib reads a file that is not gzip as it is: for a .gz name that is damage, not text.
  if (path.extension() == ".gz" && [&] {
        const int first = gzgetc(file_);  // (gzdirect knows only after a first read)
        if (first != -1) gzungetc(first, file_);
        return gzdirect(file_) != 0;
      }()) {
    gzclose(file_);
    throw DataError(fmt::format("{}: named .gz but not gzip-compressed (rename it .txt, or compress it)", path.string()));
  }
}

LineReader::~LineReader() { gzclose(file_); }

bool LineReader::fill() {
  if (at_ > 0) {
    buffer_.erase(0, at_);
    at_ = 0;
  }
  const size_t had = buffer_.size();
  buffer_.resize(had + (1 << 20));
  const int n = gzread(file_, buffer_.data() + had, 1 << 20);
  buffer_.resize(had + static_cast<size_t>(std::max(n, 0)));
  if (n < 0) {
    int code = Z_OK;
    const char* message = gzerror(file_, &code);
    throw DataError(fmt::format("{}: cannot be read: {} (a damaged or truncated .gz?)", path_.string(), message));
  }
  return n > 0;
}

bool LineReader::next(std::string& line) {
  for (;;) {
    const char* begin = buffer_.data() + at_;
    if (const void* newline = std::memchr(begin, '\n', buffer_.size() - at_)) {
      const size_t length = static_cast<size_t>(static_cast<const char*>(newline) - begin) + 1;
      line.assign(begin, length);
      at_ += length;
      return true;
    }
    if (buffer_.size() - at_ > max_line_)
      throw DataError(fmt::format("{}: a line of over {} MiB: is it text, one sentence a line?", path_.string(),
                                  max_line_ >> 20));
    if (!fill()) {
      line.assign(buffer_, at_, std::string::npos);
      at_ = buffer_.size();
      return !line.empty();
    }
  }
}

uint64_t LineReader::offset() { return static_cast<uint64_t>(std::max<z_off_t>(0, gzoffset(file_))); }

}  // namespace bertc::data
