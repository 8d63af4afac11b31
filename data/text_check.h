// Whether input is text: UTF-8 without control characters, which every reader of text in bertc
// takes (training text, task files, vocabularies). Input that is mostly not text is refused with
// its figures; a little is said with its figures (the tokenizer drops it).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace bertc::data {

// Figures of the bytes seen so far; `not_text` counts the bytes of invalid UTF-8 sequences and the
// control characters other than tab, line feed, vertical tab, form feed and carriage return.
struct TextFigures {
  uint64_t bytes = 0, not_text = 0;
  int64_t lines = 0, first_bad_line = 0;  // first_bad_line: 1-based, 0 while none
  void add_line(std::string_view line);   // one line (its line end included or not)
  // More than a tenth of the bytes: no text file looks like that, a binary or UTF-16 one does.
  bool mostly_not_text() const { return not_text > 0 && not_text * 10 > bytes; }
};

// The compression whose magic bytes `head` starts with ("gzip", "xz", "bzip2", "zstd", "zip",
// "lzma"), nullopt for none: a file's name does not say it reliably (.tgz, .gz.part, .txt).
std::optional<std::string> compression_in(std::string_view head);

// `wanted`, or when something is there already, the first of NAME-1.EXT, NAME-2.EXT, ... that is
// not: where the commands advice gives write (a shell's > would empty a file already there).
std::filesystem::path unused_name(const std::filesystem::path& wanted);

// A UTF-8 byte-order mark at the start of `text`, which readers skip (Windows tools write one).
bool starts_with_utf8_bom(std::string_view text);

// Throws DataError naming the file, the encoding its first bytes suggest (`head`: UTF-16 or
// UTF-32, by a byte-order mark or by NUL bytes) and how to convert it (`compressed`: its text is
// gzip's, so the command decompresses first), when the first bytes are a UTF-16/32 byte-order
// mark or `figures` are mostly not text; and when `head` is compressed data (a file compressed in
// a way bertc does not read, or gzip inside gzip), naming the compression.
void refuse_not_text(const std::filesystem::path& path, std::string_view head, const TextFigures& figures,
                     bool compressed = false);

// "N of M bytes (x%) are not UTF-8 text ... first on line L", when some are; nullopt when none.
std::optional<std::string> not_text_note(const std::filesystem::path& path, const TextFigures& figures);

}  // namespace bertc::data
