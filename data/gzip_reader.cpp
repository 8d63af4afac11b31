// A file's bytes, decompressed when it is gzip (see gzip_reader.h). zlib's inflate, not its gz*
// functions: gzread takes a stream cut short for the end of the file, and skips trailing bytes
// without a word; only inflate's own states tell a member's end from a file's.
#include "data/gzip_reader.h"

#include <cctype>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "data/text_check.h"
#include "data/vocab.h"
#include "support/shell_word.h"
#include "support/ascii_lower.h"

namespace bertc::data {
namespace {

// A path as one word of a command the advice gives (quoted where the shell would part it).
std::string word(const std::filesystem::path& path) { return support::shell_word(path.string()); }

constexpr size_t kChunk = size_t{1} << 20;

bool gzip_magic(const unsigned char* p, size_t n) { return n >= 2 && p[0] == 0x1f && p[1] == 0x8b; }

// A path's extension in lower case (".GZ" is ".gz": some tools write capitals).
std::string extension_of(const std::filesystem::path& p) {
  return support::ascii_lower(p.extension().string());
}

}  // namespace

GzipReader::GzipReader(const std::filesystem::path& path, Note note) : path_(path), note_(std::move(note)) {
  file_ = std::fopen(path.c_str(), "rb");
  if (!file_) throw DataError(fmt::format("{}: cannot open it: {}", path.string(), std::strerror(errno)));
  while (z_.avail_in < 2 && refill()) {
  }
  compressed_ = gzip_magic(z_.next_in, z_.avail_in);
  if (extension_of(path) == ".gz" && !compressed_) {
    std::fclose(file_);
    if (file_read_ == 0)
      throw DataError(fmt::format("{}: the file is empty, and a .gz file holds a gzip header at least: it was cut "
                                  "short or never written (make or download it again)",
                                  path.string()));
    if (file_read_ == 1 && z_.next_in[0] == 0x1f) throw cut_short();  // (the magic's first byte alone)
    if (const std::optional<std::string> how =
            compression_in(std::string_view(reinterpret_cast<const char*>(z_.next_in), z_.avail_in))) {
      // (another compressor's data named .gz: said at once, with the command that decompresses it)
      const std::string tool = *how == "zip" ? "unzip -p" : *how == "lzma" ? "xz --format=lzma -dc" : *how + " -dc";
      std::filesystem::path text = path;
      text.replace_extension();
      if (text.extension() != ".txt") text += ".txt";
      text = unused_name(text);
      throw DataError(fmt::format("{}: named .gz but holds {}-compressed data, and bertc reads text, plain or gzip'd: "
                                  "decompress it ({} {} > {}), then move {} aside (a folder's reader would meet "
                                  "it again) and give the text",
                                  path.string(), *how, tool, word(path), word(text),
                                  word(path)));
    }
    // (A zlib stream, gzip's data without its header, as zlib.compress writes: its 2-byte header is
    // CMF 0x78 with a check that makes the pair a multiple of 31.)
    const unsigned char* head = z_.next_in;
    if (z_.avail_in >= 2 && head[0] == 0x78 && (head[0] * 256 + head[1]) % 31 == 0)
      throw DataError(fmt::format(
          "{}: named .gz but holds a zlib stream (deflate without gzip's header, as Python's zlib.compress writes), "
          "and bertc reads text, plain or gzip'd: decompress it (python3 -c \"import sys, zlib; "
          "sys.stdout.buffer.write(zlib.decompress(open(sys.argv[1], 'rb').read()))\" {} > {}), then move {} "
          "aside (a folder's reader would meet it again) and give the text",
          path.string(), word(path), word(unused_name(beside(".txt"))), word(path)));
    throw DataError(fmt::format("{}: named .gz but its first bytes are not gzip's (1f 8b) nor those of another "
                                "compressor bertc knows: if it is plain text, rename it without .gz; if something "
                                "else compressed it, decompress it with that, then move the .gz aside (a folder's "
                                "reader would meet it again) and give the text",
                                path.string()));
  }
  if (compressed_ && inflateInit2(&z_, 15 + 16) != Z_OK) {  // (15 + 16: a gzip wrapper, its CRC checked)
    std::fclose(file_);
    throw DataError(fmt::format("{}: zlib cannot start decompressing it (out of memory?)", path.string()));
  }
  in_member_ = compressed_;
}

GzipReader::~GzipReader() {
  if (compressed_) inflateEnd(&z_);
  std::fclose(file_);
}

bool GzipReader::refill() {
  const size_t keep = z_.avail_in;
  if (keep > 0 && z_.next_in != reinterpret_cast<unsigned char*>(input_.data()))
    std::memmove(input_.data(), z_.next_in, keep);
  input_.resize(keep + kChunk);
  const size_t n = std::fread(input_.data() + keep, 1, kChunk, file_);
  if (n == 0 && std::ferror(file_))
    throw DataError(fmt::format("{}: reading it failed after {} bytes: {}", path_.string(), file_read_,
                                std::strerror(errno)));
  file_read_ += n;
  z_.next_in = reinterpret_cast<unsigned char*>(input_.data());
  z_.avail_in = static_cast<uInt>(keep + n);
  return n > 0;
}

size_t GzipReader::read(char* out, size_t size) {
  if (ended_ || size == 0) return 0;
  if (!compressed_) {
    if (z_.avail_in == 0 && !refill()) {
      ended_ = true;
      return 0;
    }
    const size_t n = std::min<size_t>(size, z_.avail_in);
    std::memcpy(out, z_.next_in, n);
    z_.next_in += n;
    z_.avail_in -= static_cast<uInt>(n);
    consumed_ = file_read_ - z_.avail_in;
    return n;
  }
  return inflate_some(out, size);
}

size_t GzipReader::inflate_some(char* out, size_t size) {
  for (;;) {
    if (z_.avail_in == 0 && !refill()) {
      if (in_member_) throw cut_short();
      ended_ = true;
      return 0;
    }
    z_.next_out = reinterpret_cast<unsigned char*>(out);
    z_.avail_out = static_cast<uInt>(std::min<size_t>(size, kChunk));
    const uInt asked = z_.avail_out;
    const int status = inflate(&z_, Z_NO_FLUSH);
    consumed_ = file_read_ - z_.avail_in;
    const size_t produced = asked - z_.avail_out;
    if (status == Z_STREAM_END) {
      ++members_;
      in_member_ = false;
      after_member();
      if (produced > 0 || ended_) return produced;
      continue;
    }
    if (status != Z_OK && status != Z_BUF_ERROR)  // (Z_BUF_ERROR: no progress until more input)
      throw DataError(fmt::format("{}: the gzip data is damaged in member {}, {} bytes into the file ({}): get the "
                                  "file again (gzip -t {} checks one)",
                                  path_.string(), members_ + 1, consumed_, z_.msg ? z_.msg : "zlib error",
                                  word(path_)));
    if (produced > 0) return produced;
  }
}

std::filesystem::path GzipReader::beside(const std::string& suffix) const {
  std::filesystem::path out = path_;
  if (extension_of(out) == ".gz") out.replace_extension();
  if (extension_of(out) == ".txt") out.replace_extension();
  return out += suffix;
}

DataError GzipReader::cut_short() const {
  // (The part it holds, kept knowingly: decompressed beside it under its name without .gz, the
  // cut file moved aside, so that a folder it is in reads the part and the rest alike; never onto
  // the file itself, which the shell would empty before gzip reads it, nor onto another file
  // already there: a name not taken.)
  // A task file's part keeps its kind (.tsv, .jsonl: the name its reader goes by), and its last line,
  // which the cut may have left half a row, is to be checked.
  std::filesystem::path inner = path_;
  if (extension_of(inner) == ".gz") inner.replace_extension();
  const std::string kind = extension_of(inner);
  const bool task = kind == ".tsv" || kind == ".jsonl";
  const std::filesystem::path part =
      unused_name(task ? inner.replace_extension(".part" + kind)
                       : extension_of(path_) == ".gz" ? beside(".txt") : beside(".part.txt"));
  return DataError(fmt::format(
      "{}: the gzip stream ends early: the file is cut short after {} bytes, inside member {} ({} bytes of text read "
      "before; an interrupted download or copy?). Get the whole file again (gzip -t {} checks one), or keep the "
      "part it holds knowingly: gzip -dc {} > {} (gzip says the same){}, then move {} aside",
      path_.string(), file_read_, members_ + 1, text_bytes_ + (compressed_ ? z_.total_out : 0),
      word(path_), word(path_), word(part),
      task ? " and remove its last line, which the cut may have left half a row" : "", word(path_)));
}

void GzipReader::after_member() {
  while (z_.avail_in < 2 && refill()) {
  }
  if (z_.avail_in == 0) {
    ended_ = true;
    return;
  }
  // One byte of gzip's magic at the very end: a member cut short after its first byte (gzip -t says
  // "unexpected end of file").
  if (z_.avail_in == 1 && z_.next_in[0] == 0x1f && !refill()) {
    in_member_ = true;
    throw cut_short();
  }
  if (gzip_magic(z_.next_in, z_.avail_in)) {  // another member: its text follows (gzip -d concatenates them)
    text_bytes_ += z_.total_out;  // (inflateReset starts the count anew)
    inflateReset(&z_);
    in_member_ = true;
    return;
  }
  // Bytes after the last member: gzip -d ignores them with a warning. Zero padding (tapes, some
  // copies) and a few bytes are said and ignored likewise; what looks like a member whose magic
  // is damaged, or more than a little, is refused: one flipped byte there would drop every later
  // member's text (a file of joined members, pigz's, bgzip's).
  const bool member_like = z_.avail_in >= 3 && z_.next_in[2] == 8 && (z_.next_in[0] == 0x1f || z_.next_in[1] == 0x8b);
  const uint64_t at = consumed_;
  uint64_t trailing = 0;
  bool zeros = true;
  do {
    for (uInt i = 0; i < z_.avail_in; ++i) zeros = zeros && z_.next_in[i] == 0;
    trailing += z_.avail_in;
    z_.avail_in = 0;
  } while (refill());
  consumed_ = file_read_;
  ended_ = true;
  constexpr uint64_t kFewBytes = 512;
  if (!zeros && (member_like || trailing > kFewBytes))
    throw DataError(fmt::format(
        "{}: {} bytes after its gzip stream ({} member(s) read and checked, ending at byte {}) are not gzip{}: a "
        "member there whose header is damaged would be lost text. Get the file again (gzip -t {} checks one); if "
        "those bytes are not text, keep what the members hold knowingly: gzip -dc {} > {} (gzip warns "
        "\"trailing garbage ignored\"), then move {} aside",
        path_.string(), trailing, members_, at,
        member_like ? ", and they start like a gzip member whose first bytes are damaged" : "",
        word(path_), word(path_), word(unused_name(beside(".members.txt"))),
        word(path_)));
  if (note_)
    note_(fmt::format("{}: {} {} after its gzip stream ({} member(s), all read and checked) ignored, as gzip -d "
                      "ignores them",
                      path_.string(), trailing, zeros ? "zero byte(s)" : "byte(s) that are not gzip", members_));
}

}  // namespace bertc::data
