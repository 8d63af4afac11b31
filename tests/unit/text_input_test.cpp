// data/text_input, gzip_reader and text_check: gzip read as RFC 1952 and the gzip tool define it
// (members concatenated; a stream cut short, or failing its CRC, refused; bytes after the last
// member ignored and said), and input that is not UTF-8 text refused or said with its figures.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>

#include "data/text_input.h"
#include "data/vocab.h"
#include "refusal.h"
#include "scratch_folder.h"
#include "support/shell_word.h"

namespace bertc::data {
namespace {

std::filesystem::path scratch(const std::string& name) { return testing::scratch_in("bertc-text-input-test", name); }
// A path as advice writes it in a command (quoted where the shell would part or change it).
std::string word(const std::filesystem::path& path) { return support::shell_word(path.string()); }

std::filesystem::path write(const std::string& name, const std::string& bytes) {
  const auto path = scratch(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// One gzip member of `text`, as zlib's gzip writer makes it.
std::string gzip(const std::string& text) {
  const auto path = scratch("member.gz");
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Every line of the file, with what LineReader said of it.
struct Read {
  std::string text;
  std::vector<std::string> notes;
};
Read read_all(const std::filesystem::path& path) {
  Read r;
  LineReader reader(path, size_t{64} << 20, [&](const std::string& note) { r.notes.push_back(note); });
  for (std::string line; reader.next(line);) r.text += line;
  return r;
}

std::string refusal(const std::function<void()>& f) { return testing::refusal<DataError>(f); }

// Some prose of many lines, long enough for several deflate blocks.
std::string prose() {
  std::string text;
  std::mt19937 rng(7);
  const char* words[] = {"the", "model", "reads", "every", "line", "of", "text", "and", "learns", "tokens"};
  for (int line = 0; line < 4000; ++line) {
    for (int w = 0; w < 12; ++w) text += std::string(words[rng() % 10]) + (w < 11 ? " " : "\n");
    if (line % 50 == 49) text += "\n";
  }
  return text;
}

TEST(Gzip, ReadsAWholeStreamAndConcatenatedMembers) {
  const std::string text = prose();
  EXPECT_EQ(read_all(write("whole.txt.gz", gzip(text))).text, text);
  // gzip -d of two members is both texts, one after the other.
  const Read two = read_all(write("two.txt.gz", gzip(text) + gzip("second member\n")));
  EXPECT_EQ(two.text, text + "second member\n");
  EXPECT_TRUE(two.notes.empty());
  // A gzip file whatever its name.
  EXPECT_EQ(read_all(write("named-plain.txt", gzip(text))).text, text);
}

TEST(Gzip, RefusesAStreamCutShortWhereverItIsCut) {
  const std::string whole = gzip(prose());
  // Inside the header, the deflate data, and the 8-byte trailer (CRC32, length): all cut short.
  for (size_t keep : {size_t{1}, size_t{5}, size_t{12}, whole.size() / 3, whole.size() / 2, whole.size() - 9,
                      whole.size() - 8, whole.size() - 4, whole.size() - 1}) {
    const auto path = write("cut.txt.gz", whole.substr(0, keep));
    EXPECT_NE(refusal([&] { read_all(path); }).find("the gzip stream ends early: the file is cut short after " +
                                                     std::to_string(keep) + " bytes"),
              std::string::npos)
        << keep << ": " << refusal([&] { read_all(path); });
  }
  // A second member cut short is as much a loss as the first, even after its first byte.
  const auto second = write("cut-second.txt.gz", whole + whole.substr(0, whole.size() / 2));
  EXPECT_NE(refusal([&] { read_all(second); }).find("inside member 2"), std::string::npos);
  const auto one_byte = write("cut-one-byte.txt.gz", whole + "\x1f");
  EXPECT_NE(refusal([&] { read_all(one_byte); }).find("inside member 2 (" + std::to_string(prose().size()) +
                                                      " bytes of text read before"),
            std::string::npos)
      << refusal([&] { read_all(one_byte); });
  // The part it holds is kept beside it, under its name without .gz (so a folder reads it too).
  EXPECT_NE(refusal([&] { read_all(second); })
                .find("gzip -dc " + word(second) + " > " + word(scratch("cut-second.txt"))),
            std::string::npos)
      << refusal([&] { read_all(second); });
}

TEST(Gzip, RefusesDamageTheChecksCatch) {
  std::string bad_crc = gzip(prose());
  bad_crc[bad_crc.size() - 6] ^= 0x40;  // in the trailer's CRC32
  EXPECT_NE(refusal([&] { read_all(write("crc.txt.gz", bad_crc)); }).find("damaged in member 1"), std::string::npos);
  std::string bad_length = gzip(prose());
  bad_length[bad_length.size() - 2] ^= 0x01;  // in the trailer's length
  EXPECT_NE(refusal([&] { read_all(write("length.txt.gz", bad_length)); }).find("damaged"), std::string::npos);
  EXPECT_NE(refusal([&] { read_all(write("plain.txt.gz", "not compressed\n")); }).find("its first bytes are not gzip's"),
            std::string::npos);
  EXPECT_NE(refusal([&] { read_all(write("empty.txt.gz", "")); }).find("the file is empty"), std::string::npos);
}

TEST(Gzip, IgnoresAndSaysBytesAfterTheLastMember) {
  const std::string text = prose();
  const Read junk = read_all(write("junk.txt.gz", gzip(text) + "JUNKJUNK"));
  EXPECT_EQ(junk.text, text);
  ASSERT_EQ(junk.notes.size(), 1u);
  EXPECT_NE(junk.notes[0].find("8 byte(s) that are not gzip after its gzip stream (1 member(s)"), std::string::npos);
  // A member whose magic is damaged (one flipped byte at the second member's start) would drop
  // every later member's text: refused, as is more than a little that is not gzip.
  const std::string second = gzip("second member's text\n");
  std::string damaged = gzip(text) + second;
  damaged[damaged.size() - second.size()] = 0x1e;
  EXPECT_NE(refusal([&] { read_all(write("damaged-member.txt.gz", damaged)); })
                .find("and they start like a gzip member whose first bytes are damaged"),
            std::string::npos);
  EXPECT_NE(refusal([&] { read_all(write("much.txt.gz", gzip(text) + std::string(600, 'x'))); })
                .find("600 bytes after its gzip stream (1 member(s) read and checked"),
            std::string::npos);
  const Read zeros = read_all(write("zeros.txt.gz", gzip(text) + std::string(100, '\0')));
  EXPECT_EQ(zeros.text, text);
  ASSERT_EQ(zeros.notes.size(), 1u);
  EXPECT_NE(zeros.notes[0].find("100 zero byte(s)"), std::string::npos);
}

TEST(TextCheck, RefusesBinaryAndUtf16AndSaysAFewBadBytes) {
  std::string random(200000, '\0');
  std::mt19937 rng(1);
  for (char& c : random) c = static_cast<char>(rng());
  EXPECT_NE(refusal([&] { read_all(write("random.txt", random)); }).find("is not text"), std::string::npos);
  // UTF-16 with and without its byte-order mark.
  std::string utf16le = "\xff\xfe", bare;
  for (char c : std::string("some text\nmore text\n")) bare += std::string{c, '\0'};
  EXPECT_NE(refusal([&] { read_all(write("bom16.txt", utf16le + bare)); }).find("UTF-16 (a UTF-16 byte-order mark)"),
            std::string::npos);
  EXPECT_NE(refusal([&] { read_all(write("bare16.txt", bare + bare)); }).find("UTF-16LE (every other byte"),
            std::string::npos);
  // A UTF-8 byte-order mark is not text of the file.
  EXPECT_EQ(read_all(write("bom8.txt", "\xef\xbb\xbfhello\n")).text, "hello\n");
  // A few bad bytes: read, said with figures and the first line.
  const Read some = read_all(write("some.txt", prose() + "odd \xff\xfe bytes\n"));
  ASSERT_EQ(some.notes.size(), 1u);
  EXPECT_NE(some.notes[0].find("2 of its"), std::string::npos) << some.notes[0];
  EXPECT_NE(some.notes[0].find("first on line 4081"), std::string::npos) << some.notes[0];
  EXPECT_EQ(some.notes[0].find("iconv"), std::string::npos) << some.notes[0];  // (stray bytes: no conversion)
  EXPECT_TRUE(read_all(write("clean.txt", prose())).notes.empty());
  // Many (Latin-1's accented letters, a byte each: 5%): the note says how to convert, to a new name.
  std::string latin1 = prose();
  for (size_t i = 0; i < latin1.size(); i += 20)
    if (latin1[i] == 'e') latin1[i] = '\xe9';
  for (size_t i = 3; i < latin1.size(); i += 20) latin1[i] = latin1[i] == '\n' ? '\n' : '\xe8';
  const Read accented = read_all(write("latin1.txt", latin1));
  ASSERT_EQ(accented.notes.size(), 1u);
  EXPECT_NE(accented.notes[0].find("convert it (iconv -f ENCODING -t UTF-8 " + word(scratch("latin1.txt")) + " > " +
                                   word(scratch("latin1.utf8.txt")) + ")"),
            std::string::npos)
      << accented.notes[0];
}

// The commands an error advises never write onto the file they read (the shell empties a `> F`
// before the command reads F): a hostile pass lost its input following them.
TEST(TextCheck, AdviceNeverWritesOntoItsInput) {
  std::string bare;
  for (char c : std::string("some text\nmore text\n")) bare += std::string{c, '\0'};
  const auto converted = write("converted.txt", bare + bare);
  EXPECT_NE(refusal([&] { read_all(converted); })
                .find("iconv -f UTF-16LE -t UTF-8 " + word(converted) + " > " + word(scratch("converted.utf8.txt"))),
            std::string::npos)
      << refusal([&] { read_all(converted); });
  // A gzip stream cut short in a file not named .gz: the part goes to another name.
  const std::string whole = gzip(prose());
  const auto cut = write("corpus.txt", whole.substr(0, whole.size() / 2));
  EXPECT_NE(refusal([&] { read_all(cut); })
                .find("gzip -dc " + word(cut) + " > " + word(scratch("corpus.part.txt"))),
            std::string::npos)
      << refusal([&] { read_all(cut); });
  // A name the shell would split or end at its quote is quoted as one word (as pasted, the
  // command reads the file named), the part's name too.
  const auto quoted = write("it's cut.txt.gz", whole.substr(0, whole.size() / 2));
  const std::string dir = scratch("x").parent_path().string() + "/";
  EXPECT_NE(refusal([&] { read_all(quoted); })
                .find("gzip -dc '" + dir + "it'\\''s cut.txt.gz' > '" + dir + "it'\\''s cut.txt'"),
            std::string::npos)
      << refusal([&] { read_all(quoted); });
}

// Compressed data given as text is named as such (its magic bytes), not advised as an encoding;
// gzip inside gzip likewise. A pipe is no file of text.
TEST(TextCheck, NamesCompressedDataAndRefusesAPipe) {
  EXPECT_NE(refusal([&] { read_all(write("xz.txt", std::string("\xfd" "7zXZ\0\x00\x04\xe6\xd6\xb4\x46", 12) + prose())); })
                .find("xz-compressed data, and bertc reads text"),
            std::string::npos);
  EXPECT_NE(refusal([&] { read_all(write("twice.txt.gz", gzip(gzip(prose())))); })
                .find("gzip-compressed data inside the gzip stream (compressed twice)"),
            std::string::npos);
  // Named .gz, another compressor's: said at once with its own command (not "rename it .txt",
  // which only leads to this refusal).
  const auto xz_gz = write("xz-named.txt.gz", std::string("\xfd" "7zXZ\0\x00\x04\xe6\xd6\xb4\x46", 12) + prose());
  EXPECT_NE(refusal([&] { read_all(xz_gz); })
                .find("named .gz but holds xz-compressed data, and bertc reads text, plain or gzip'd: decompress it "
                      "(xz -dc " + word(xz_gz) + " > " + word(scratch("xz-named.txt")) + ")"),
            std::string::npos)
      << refusal([&] { read_all(xz_gz); });
  const auto fifo = scratch("pipe.txt");
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(refusal([&] { text_files(fifo); }).find("not a regular file (a pipe"), std::string::npos);
}

// In a folder, the advice for another compressor's data named .gz works as given: decompressed
// beside it and the .gz moved aside, the folder reads (it named the same .gz again when the
// advice left the .gz in place).
TEST(TextCheck, TheAdviceForAnotherCompressorsGzWorksInAFolder) {
  const auto folder = scratch("folder-with-xz");
  std::filesystem::create_directories(folder);
  std::ofstream(folder / "a.txt") << prose();
  const auto xz = folder / "b.txt.gz";
  std::ofstream(xz, std::ios::binary) << std::string("\xfd" "7zXZ\0\x00\x04\xe6\xd6\xb4\x46", 12) + prose();
  auto read_folder = [&] {
    for (const auto& file : text_files(folder)) read_all(file);
  };
  const std::string why = refusal(read_folder);
  const std::string target = (folder / "b.txt").string();
  ASSERT_NE(why.find("(xz -dc " + word(xz) + " > " + word(target) + "), then move " + word(xz) + " aside"),
            std::string::npos)
      << why;
  std::ofstream(target) << prose();  // (what xz -dc would write)
  std::filesystem::rename(xz, scratch("b.txt.gz.aside"));
  EXPECT_NO_THROW(read_folder());
}

// A file of zero bytes (never written, or made full size by a copy that did not finish) is no
// UTF-16, whose other bytes are not NUL: said as what it is.
TEST(TextCheck, ZeroBytesAreNotUtf16) {
  for (const auto& [name, bytes] : {std::pair<std::string, std::string>{"zeros.txt", std::string(3000000, '\0')},
                                    {"zeros.txt.gz", gzip(std::string(1000000, '\0'))}}) {
    const std::string why = refusal([&] { read_all(write(name, bytes)); });
    EXPECT_NE(why.find("are (nearly) all zero bytes"), std::string::npos) << why;
    EXPECT_EQ(why.find("UTF-16"), std::string::npos) << why;
  }
}

// Lines end at \n, \r\n or a lone \r (an old Mac editor's file would otherwise be one line: one
// training example of a whole corpus), also where a \r\n falls across two buffer fills.
TEST(LineReader, EndsLinesAtEveryLineEnd) {
  auto lines = [](const std::string& name, const std::string& text) {
    std::vector<std::string> out;
    LineReader reader(write(name, text));
    for (std::string line; reader.next(line);) out.push_back(line);
    return out;
  };
  EXPECT_EQ(lines("cr.txt", "a\rb\r\rc"), (std::vector<std::string>{"a\r", "b\r", "\r", "c"}));
  EXPECT_EQ(lines("crlf.txt", "a\r\nb\r\n"), (std::vector<std::string>{"a\r\n", "b\r\n"}));
  EXPECT_EQ(lines("mixed.txt", "a\nb\rc\r\nd\r"), (std::vector<std::string>{"a\n", "b\r", "c\r\n", "d\r"}));
  std::string across((1 << 20) - 1, 'x');  // (a \r the first fill ends with, its \n in the second)
  const auto split = lines("across.txt", across + "\r\ny\n");
  ASSERT_EQ(split.size(), 2u);
  EXPECT_EQ(split[0], across + "\r\n");
  std::string prose_cr = prose();
  std::replace(prose_cr.begin(), prose_cr.end(), '\n', '\r');
  EXPECT_EQ(lines("prose-cr.txt", prose_cr).size(), lines("prose.txt", prose()).size());
}

TEST(TextFiles, RefusesAnEntryNamedAsTextThatIsNoFile) {
  const auto dir = scratch("folder");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "b.txt");
  write("folder/a.txt", "text\n");
  EXPECT_NE(refusal([&] { text_files(dir); }).find("b.txt: named as text but not a file (a folder)"),
            std::string::npos);
  std::filesystem::remove(dir / "b.txt");
  EXPECT_EQ(text_files(dir).size(), 1u);
}

// Nothing in a folder of text is left out without a word: a compressed file is refused whatever its
// name says (gzip named .tgz or .gz.part, xz named .lzma), any other file is said, with a count.
TEST(TextFiles, RefusesCompressedFilesByTheirBytesAndSaysWhatIsLeftOut) {
  const auto dir = scratch("mixed");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  write("mixed/a.txt", "text\n");
  for (const auto& [name, bytes] : {std::pair<std::string, std::string>{"e.tgz", gzip("text\n")},
                                    {"f.txt.gz.part", gzip("text\n")},
                                    {"c.txt.lzma", std::string("\xfd" "7zXZ\0 rest", 12)},
                                    {"d.bin", std::string("BZh91AY&SY")}}) {
    const auto path = write("mixed/" + name, bytes);
    EXPECT_NE(refusal([&] { text_files(dir); }).find(path.string() + ": compressed ("), std::string::npos)
        << name << ": " << refusal([&] { text_files(dir); });
    std::filesystem::remove(path);
  }
  write("mixed/b.text", "more text\n");
  write("mixed/g", "more text\n");
  std::vector<std::string> notes;
  EXPECT_EQ(text_files(dir, [&](const std::string& n) { notes.push_back(n); }).size(), 1u);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("2 file(s) not named .txt or .txt.gz left out (b.text, g)"), std::string::npos) << notes[0];
  std::filesystem::remove(dir / "a.txt");
  EXPECT_NE(refusal([&] { text_files(dir); }).find("name text files so; it holds 2"), std::string::npos);
}

}  // namespace
}  // namespace bertc::data
