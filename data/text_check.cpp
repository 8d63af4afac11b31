// Whether input is text (see text_check.h).
#include "data/text_check.h"

#include <algorithm>

#include <fmt/format.h>
#include <utf8proc.h>

#include "data/vocab.h"
#include "support/shell_word.h"

namespace bertc::data {
namespace {

bool is_control(int32_t cp) {
  const bool line_space = cp == '\t' || cp == '\n' || cp == '\v' || cp == '\f' || cp == '\r';
  return (cp < 0x20 && !line_space) || (cp >= 0x7f && cp <= 0x9f);
}

// An encoding other than UTF-8 that a file's first bytes show: its iconv name, and why.
struct OtherEncoding {
  std::string name, why;
  bool marked = false;  // by a byte-order mark: certain
};

std::optional<OtherEncoding> other_encoding(std::string_view head) {
  auto starts = [&](std::string_view mark) { return head.substr(0, mark.size()) == mark; };
  using namespace std::string_view_literals;
  // (iconv's UTF-16 and UTF-32 read the mark and drop it)
  if (starts("\xff\xfe\0\0"sv) || starts("\0\0\xfe\xff"sv)) return OtherEncoding{"UTF-32", "a UTF-32 byte-order mark", true};
  if (starts("\xff\xfe"sv) || starts("\xfe\xff"sv)) return OtherEncoding{"UTF-16", "a UTF-16 byte-order mark", true};
  size_t even = 0, odd = 0;
  for (size_t i = 0; i < head.size(); ++i) (i % 2 ? odd : even) += head[i] == '\0';
  // UTF-16 of text in ASCII's range: most of one half's bytes NUL, few of the other's (a file of
  // zero bytes has both halves NUL: not text at all, said as such).
  if (head.size() >= 16 && 10 * std::max(even, odd) >= 4 * head.size() && 20 * std::min(even, odd) <= head.size())
    return OtherEncoding{odd > even ? "UTF-16LE" : "UTF-16BE", "every other byte of its start is NUL", false};
  return std::nullopt;
}

// Where converted text goes: beside the file, under a name that is never the file's own (a
// command that wrote onto its input would empty it before reading it), keeping the kind its
// extension says (a task file's .tsv or .jsonl, which its reader goes by; .txt otherwise).
std::filesystem::path converted_path(const std::filesystem::path& path) {
  std::filesystem::path out = path;
  if (out.extension() == ".gz") out.replace_extension();
  const std::string kind = out.extension() == ".tsv" || out.extension() == ".jsonl" ? out.extension().string() : ".txt";
  if (out.extension() == kind) out.replace_extension();
  out += ".utf8" + kind;
  return out;
}

// (and not one taken: a file of that name already there would be emptied by the command's >)
std::string converted_name(const std::filesystem::path& path) {
  return unused_name(converted_path(path)).string();
}

std::string share(uint64_t part, uint64_t whole) {
  return fmt::format("{:.3g}%", whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0);
}

}  // namespace

void TextFigures::add_line(std::string_view line) {
  ++lines;
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(line.data());
  const auto* end = p + line.size();
  const uint64_t before = not_text;
  while (p < end) {
    if (*p >= 0x20 && *p < 0x7f) {  // (printable ASCII, most of any text: no decoding)
      ++p;
      continue;
    }
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(p, end - p, &cp);
    if (n <= 0) {
      ++not_text, ++p;  // one byte that starts no valid sequence
      continue;
    }
    if (is_control(cp)) not_text += static_cast<uint64_t>(n);
    p += n;
  }
  bytes += line.size();
  if (not_text > before && first_bad_line == 0) first_bad_line = lines;
}

std::optional<std::string> compression_in(std::string_view head) {
  using namespace std::string_view_literals;
  if (head.starts_with("\x1f\x8b"sv)) return "gzip";
  if (head.starts_with("\xfd" "7zXZ\0"sv)) return "xz";
  if (head.starts_with("BZh"sv) && head.size() > 3 && head[3] >= '1' && head[3] <= '9') return "bzip2";
  if (head.starts_with("\x28\xb5\x2f\xfd"sv)) return "zstd";
  if (head.starts_with("PK\x03\x04"sv)) return "zip";
  if (head.starts_with("\x5d\0\0"sv)) return "lzma";
  return std::nullopt;
}

bool starts_with_utf8_bom(std::string_view text) { return text.starts_with("\xef\xbb\xbf"); }

void refuse_not_text(const std::filesystem::path& path, std::string_view head, const TextFigures& figures,
                     bool compressed) {
  if (const std::optional<std::string> how = compression_in(head))
    throw DataError(fmt::format("{}: {}-compressed data{}, and bertc reads text, plain or in one gzip layer: "
                                "decompress it and give the text",
                                path.string(), *how, compressed ? " inside the gzip stream (compressed twice)" : ""));
  const std::optional<OtherEncoding> encoding = other_encoding(head);
  if (!(encoding && encoding->marked) && !figures.mostly_not_text()) return;
  // The commands on the file's bytes, or (gzip) on what it decompresses to.
  const std::string file = support::shell_word(path.string());
  auto convert = [&](const std::string& from) {
    const std::string out = support::shell_word(converted_name(path));
    return compressed ? fmt::format("gzip -dc {} | iconv -f {} -t UTF-8 > {}", file, from, out)
                      : fmt::format("iconv -f {} -t UTF-8 {} > {}", from, file, out);
  };
  if (!encoding && head.size() >= 16 && 10 * static_cast<size_t>(std::count(head.begin(), head.end(), '\0')) >=
                                            9 * head.size())
    throw DataError(fmt::format("{}: is not text: its first {} bytes are (nearly) all zero bytes, as a file is "
                                "that was never written, or made full size by a copy or download that did not "
                                "finish: get the text file again",
                                path.string(), head.size()));
  if (encoding)
    throw DataError(fmt::format("{}: text in {} ({}), and bertc reads UTF-8: convert it ({}) and give the converted "
                                "file (in a folder of text: in place of this one, which moves out of the folder)",
                                path.string(), encoding->name, encoding->why, convert(encoding->name)));
  // (No encoding is named unless the bytes show one: converting from a wrong guess makes valid
  // UTF-8 of the wrong characters, which would then be read without a word.)
  throw DataError(fmt::format("{}: is not text: {} of its first {} bytes ({}) are invalid UTF-8 or control "
                              "characters (from line {} on). bertc reads UTF-8 text; if this is text in another "
                              "encoding, find which ({}) and convert it ({}), then move this file out of its folder "
                              "(a folder of text reads every .txt in it), else give the text file it was meant to be",
                              path.string(), figures.not_text, figures.bytes, share(figures.not_text, figures.bytes),
                              figures.first_bad_line,
                              compressed ? fmt::format("gzip -dc {} | file -i -", file) : fmt::format("file -i {}", file),
                              convert("ENCODING")));
}

std::optional<std::string> not_text_note(const std::filesystem::path& path, const TextFigures& figures) {
  if (figures.not_text == 0) return std::nullopt;
  // (More than one byte in a hundred: more than stray bytes in UTF-8 text; words in another
  // encoding lose their accented letters, and the way to convert is worth saying.)
  const bool many = figures.not_text * 100 > figures.bytes;
  const bool gz = path.extension() == ".gz";
  const std::string file = support::shell_word(path.string());
  return fmt::format("{}: {} of its {} bytes ({}) are invalid UTF-8 or control characters, first on line {}: the "
                     "tokenizer drops them (is part of the file in another encoding?{})",
                     path.string(), figures.not_text, figures.bytes, share(figures.not_text, figures.bytes),
                     figures.first_bad_line,
                     many ? fmt::format(" if so, find which ({}) and convert it ({}iconv -f ENCODING -t UTF-8 {}> {}), "
                                        "then move this file out of its folder (a folder of text reads every .txt in "
                                        "it: the text would be read twice)",
                                        gz ? fmt::format("gzip -dc {} | file -i -", file) : fmt::format("file -i {}", file),
                                        gz ? fmt::format("gzip -dc {} | ", file) : "", gz ? "" : file + " ",
                                        support::shell_word(converted_name(path)))
                          : "");
}

std::filesystem::path unused_name(const std::filesystem::path& wanted) {
  std::error_code ec;
  // (symlink_status: a dangling link is a name taken too, and > would write through it)
  if (!std::filesystem::exists(std::filesystem::symlink_status(wanted, ec))) return wanted;
  const std::string stem = wanted.stem().string(), ext = wanted.extension().string();
  for (int n = 1;; ++n) {
    const std::filesystem::path next = wanted.parent_path() / fmt::format("{}-{}{}", stem, n, ext);
    if (!std::filesystem::exists(std::filesystem::symlink_status(next, ec))) return next;
  }
}

}  // namespace bertc::data
