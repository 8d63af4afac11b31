// Text files and their lines (see text_input.h).
#include "data/text_input.h"

#include <algorithm>

#include <fmt/format.h>

#include "data/vocab.h"

namespace bertc::data {
namespace {

bool is_text(const std::filesystem::path& p) {
  const std::string name = p.filename().string();
  return name.ends_with(".txt") || name.ends_with(".txt.gz");
}

}  // namespace

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

LineReader::LineReader(const std::filesystem::path& path) : path_(path), file_(gzopen(path.c_str(), "rb")) {
  if (!file_) throw DataError(fmt::format("{}: cannot open", path.string()));
  gzbuffer(file_, 1 << 20);
}

LineReader::~LineReader() { gzclose(file_); }

bool LineReader::next(std::string& line) {
  line.clear();
  char buffer[1 << 16];
  while (gzgets(file_, buffer, sizeof buffer)) {
    line += buffer;
    if (!line.empty() && line.back() == '\n') return true;
  }
  int code = Z_OK;
  const char* message = gzerror(file_, &code);
  if (code != Z_OK && code != Z_STREAM_END)
    throw DataError(fmt::format("{}: cannot be read: {} (a damaged or truncated .gz?)", path_.string(), message));
  return !line.empty();
}

uint64_t LineReader::offset() { return static_cast<uint64_t>(std::max<z_off_t>(0, gzoffset(file_))); }

}  // namespace bertc::data
