// Text files and their lines (see text_input.h).
#include "data/text_input.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <optional>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <utf8proc.h>
#include <xxhash.h>

#include "data/prepare_shards.h"
#include "data/vocab.h"
#include "support/ascii_lower.h"

namespace bertc::data {
namespace {

bool is_text(const std::filesystem::path& p) {
  const std::string name = support::ascii_lower(p.filename().string());
  return name.ends_with(".txt") || name.ends_with(".txt.gz");
}

// Compressed, in a way bertc does not read as text (or gzip without .txt in its name), by its
// name or by its first bytes (a .tgz, a .gz.part, a .lzma): refused, never left out.
std::optional<std::string> compression_of(const std::filesystem::path& p) {
  const std::string ext = support::ascii_lower(p.extension().string());
  for (const char* e : {".gz", ".bz2", ".xz", ".zst", ".zip", ".7z", ".lz4", ".lzma", ".tgz", ".tbz2", ".txz"})
    if (ext == e) return ext;
  std::ifstream in(p, std::ios::binary);
  char b[6] = {};
  in.read(b, sizeof b);
  return compression_in(std::string_view(b, static_cast<size_t>(in.gcount())));
}

// Refuses a WordPiece vocabulary (its first line a special token: "[PAD]", as BERT's and bertc's) among the
// training text: a vocab.txt written into a folder of text (bertc vocab -o there) would be
// trained on as a document, without a word. (.txt.gz files are not opened here.)
void refuse_vocabulary_as_text(const std::filesystem::path& file, const std::filesystem::path& folder) {
  if (support::ascii_lower(file.filename().string()).ends_with(".gz")) return;
  std::ifstream in(file, std::ios::binary);
  std::string first;
  std::getline(in, first);
  if (!first.empty() && first.back() == '\r') first.pop_back();
  if (first.starts_with("\xef\xbb\xbf")) first.erase(0, 3);
  // (BERT's and bertc's put [PAD] first; Hugging Face's WordPiece trainer may put [UNK] first.)
  if (first != "[PAD]" && first != "[UNK]" && first != "[CLS]" && first != "[SEP]" && first != "[MASK]") return;
  if (folder.empty())
    throw DataError(fmt::format("{}: a WordPiece vocabulary (its first line {}, a special token), not training text: "
                                "give the text itself ([train] data, --data or --input), and the vocabulary as --vocab",
                                file.string(), first));
  throw DataError(fmt::format("{}: a WordPiece vocabulary (its first line {}, a special token) in the folder of text {}: "
                              "it would be trained on as a document; move it out of the folder, and give --vocab (or "
                              "[train] vocab) its new path",
                              file.string(), first, folder.string()));
}

}  // namespace

std::optional<std::filesystem::path> text_file_in(const std::filesystem::path& folder, const std::string& except) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(folder, ec))
    if (is_text(e.path()) && support::ascii_lower(e.path().filename().string()) != except) return e.path();
  return std::nullopt;
}

namespace {

// What Python's str.strip() strips, as BERT's create_pretraining_data.py strips each line before
// it asks whether the line is blank: a character of category Zs or of bidirectional class WS, B
// or S (str.isspace: no-break and ideographic spaces, form feeds, U+001C-U+001F, U+0085 ...).
bool is_python_space(utf8proc_int32_t c) {
  const utf8proc_property_t* p = utf8proc_get_property(c);
  return p->category == UTF8PROC_CATEGORY_ZS || p->bidi_class == UTF8PROC_BIDI_CLASS_WS ||
         p->bidi_class == UTF8PROC_BIDI_CLASS_B || p->bidi_class == UTF8PROC_BIDI_CLASS_S;
}

}  // namespace

std::string trim_line(const std::string& s) {
  // (one pass over the code points: the first byte of the first that is not a space, and the
  // end of the last; a byte that is not UTF-8 counts as text)
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  size_t begin = std::string::npos, end = 0;
  for (size_t at = 0; at < s.size();) {
    utf8proc_int32_t c = -1;
    const utf8proc_ssize_t n = utf8proc_iterate(bytes + at, static_cast<utf8proc_ssize_t>(s.size() - at), &c);
    const size_t length = n > 0 ? static_cast<size_t>(n) : 1;
    if (c < 0 || !is_python_space(c)) {
      if (begin == std::string::npos) begin = at;
      end = at + length;
    }
    at += length;
  }
  return begin == std::string::npos ? "" : s.substr(begin, end - begin);
}

std::vector<std::filesystem::path> text_files(const std::filesystem::path& input,
                                              const std::function<void(const std::string&)>& note,
                                              std::string_view flag) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(input, ec)) {
    refuse_vocabulary_as_text(input, {});
    return {input};
  }
  if (std::filesystem::exists(input, ec) && !std::filesystem::is_directory(input, ec))
    throw DataError(fmt::format("{}: not a regular file (a pipe, a device or a socket): bertc reads training text "
                                "from regular files; write it to a file and give that",
                                input.string()));
  if (!std::filesystem::is_directory(input, ec)) {
    // (A link that leads nowhere is there: said as the link it is, not as nothing.)
    if (std::filesystem::is_symlink(input, ec)) {
      std::filesystem::path p = input;
      bool loop = true;
      for (int links = 0; links < 40 && loop; ++links) {
        const std::filesystem::path to = std::filesystem::read_symlink(p, ec);
        p = (to.is_absolute() ? to : p.parent_path() / to).lexically_normal();
        loop = !ec && std::filesystem::is_symlink(p, ec);
      }
      throw DataError(fmt::format("{}: a link {}: point it at the training text (a file or a folder), or give that "
                                  "itself",
                                  input.string(),
                                  loop ? "in a loop of links (each leads to the next, and back)"
                                       : fmt::format("to {}, which does not exist", p.string())));
    }
    throw DataError(fmt::format("{}: no such file or folder of training text (set [train] data, or give its path "
                                "with {})",
                                input.string(), flag));
  }
  std::vector<std::filesystem::path> files;
  std::vector<std::string> left_out;
  // Every entry is read, refused or said: none is left out without a word.
  for (const auto& e : std::filesystem::directory_iterator(input)) {
    if (e.is_directory(ec) && !is_text(e.path())) {
      // (an IR dump, --dump-ir, holds a stages.txt that is its list, no text: a folder like another)
      if (text_file_in(e.path(), "stages.txt"))
        throw DataError(fmt::format("{}: a folder of text inside {}: only the folder given is read, so its files would "
                                    "be left out: give that folder instead, or move its files up into {} under names not taken there",
                                    e.path().string(), input.string(), input.string()));
      continue;
    }
    if (!is_text(e.path())) {
      if (!e.is_regular_file(ec)) continue;
      if (const std::optional<std::string> how = compression_of(e.path()))
        throw DataError(fmt::format("{}: compressed ({}), and bertc reads .txt and .txt.gz files: decompress it (or, "
                                    "gzip'd text, name it .txt.gz), or move it out of the folder",
                                    e.path().string(), *how));
      left_out.push_back(e.path().filename().string());
      continue;
    }
    if (!e.is_regular_file(ec))
      throw DataError(fmt::format("{}: named as text but not a file ({}): its text would be left out; move it out of "
                                  "the folder, or put the file back",
                                  e.path().string(), e.is_directory(ec) ? "a folder" : "a broken link or special file"));
    refuse_vocabulary_as_text(e.path(), input);
    files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) refuse_folder_being_prepared(input);
  if (files.empty() && std::filesystem::exists(input / ".prepare-scratch", ec))
    throw DataError(fmt::format("{}: holds what a stopped bertc prepare-data left (.prepare-scratch, .prepare-lock) "
                                "and no shards: run that prepare-data again into it (it removes them first)",
                                input.string()));
  if (files.empty()) {
    std::sort(left_out.begin(), left_out.end());
    throw DataError(fmt::format("{}: the folder holds no training text (.txt or .txt.gz files{}; bertc train also "
                                "reads a folder of HDF5 shards, which bertc prepare-data makes)",
                                input.string(),
                                left_out.empty() ? ""
                                                 : fmt::format(": name text files so; it holds {} other file(s): {}{}",
                                                               left_out.size(), left_out.front(),
                                                               left_out.size() > 1 ? ", ..." : "")));
  }
  if (!left_out.empty() && note) {
    std::sort(left_out.begin(), left_out.end());
    const size_t shown = std::min<size_t>(left_out.size(), 5);
    note(fmt::format("{}: {} file(s) not named .txt or .txt.gz left out ({}{}): rename any that is training text",
                     input.string(), left_out.size(),
                     fmt::join(left_out.begin(), left_out.begin() + static_cast<long>(shown), ", "),
                     left_out.size() > shown ? ", ..." : ""));
  }
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

void FileTexts::line(std::string_view text) {
  hash_ = XXH3_64bits_withSeed(text.data(), text.size(), hash_ ^ 0x9E3779B97F4A7C15ull);  // (chained: order counts)
  any_ = true;
}

void FileTexts::end(const std::filesystem::path& file, const std::function<void(const std::string&)>& note) {
  if (!any_) {
    if (note) note(fmt::format("{}: holds no text (zero bytes, or an empty .gz): nothing of it is read", file.string()));
  } else {
    for (const auto& [hash, earlier] : seen_)
      if (hash == hash_)
        throw DataError(fmt::format("{} holds the same text as {} (a link to it, or a copy, compressed or not): it "
                                    "would be trained twice; remove one of them from the input",
                                    file.string(), earlier.string()));
    seen_.emplace_back(hash_, file);
  }
  hash_ = 0, any_ = false;
}

}  // namespace bertc::data
