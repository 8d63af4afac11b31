// Text into HDF5 shards in two streaming passes (see prepare_shards.h).
#include "data/prepare_shards.h"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <malloc.h>
#include <memory>
#include <mutex>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xxhash.h>

#include "data/hdf5_shard.h"
#include "data/text_input.h"
#include "data/vocab.h"
#include "data/text_shards.h"
#include "support/shell_word.h"
#include "support/ascii_lower.h"

namespace bertc::data {
namespace {

using Clock = std::chrono::steady_clock;

// A shard's documents on disk between the passes: per document its sentence count, then per
// sentence its length and token ids (u32, u32, i32...).
struct ScratchShard {
  std::filesystem::path path;
  std::ofstream out;
  int64_t documents = 0, sentences = 0, tokens = 0;
  int64_t chunks = 0;  // its documents' pieces of up to seq_len - 3 tokens: about the examples of one copy
};

// What a run takes on the --output file system at its peak, the scratch of pass 1 and the shards
// pass 2 makes beside it, and what of it this run holds now (removed when it ends).
struct Room {
  uint64_t scratch = 0, shards = 0, held = 0;
};

// `path` absolute, links followed as far as it exists (weakly_canonical alone leaves "out" as it
// is while "./out" becomes "/cwd/out": two spellings of one folder compared unequal).
std::filesystem::path resolved(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
}

// Bytes of the regular files under `folder`.
uint64_t bytes_under(const std::filesystem::path& folder) {
  uint64_t bytes = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(folder, ec))
    if (e.is_regular_file(ec)) bytes += e.file_size(ec);
  return bytes;
}

// What works after a write into `output` failed with `error` (by its errno: a file size limit is
// no full disk, and a permission is neither). A full disk or quota gets the room the whole run
// needs against the room there once this run's files are gone, so that one change is enough.
std::string write_fix(int error, const std::filesystem::path& output, const Room& room) {
  if (error == EFBIG) return "raise the file size limit (ulimit -f), or use more --shards (smaller files)";
  if (error == EACCES || error == EPERM || error == EROFS)
    return "make the --output folder writable, or choose another --output";
  if (error != ENOSPC && error != EDQUOT) return "choose another --output, or run the same command again";
  auto mib = [](uint64_t bytes) { return static_cast<double>(bytes) / double(1 << 20); };
  // (a tenth more, and a MiB: shards differ in size a little, and a file system rounds files up to
  // its blocks)
  const uint64_t need = ((room.scratch + room.shards) * 11 / 10 >> 20) + 1;
  std::error_code ec;
  const std::filesystem::space_info space = std::filesystem::space(output, ec);
  const uint64_t free = ec ? 0 : (space.available + room.held) >> 20;
  const std::string figures = fmt::format(
      "this run needs about {} MiB free there at its peak (pass 1's scratch, {:.1f} MiB, and the shards pass 2 "
      "makes beside it, about {:.1f} MiB), and {} MiB are free there once this run's files are removed",
      need, mib(room.scratch), mib(room.shards), free);
  if (ec || free >= need)
    return fmt::format("{}: a quota may be what stops it (raise it), or choose an --output with {} MiB free", figures,
                       need);
  return fmt::format("{}: free {} MiB more there (or raise the quota), or choose an --output with {} MiB free", figures,
                     need - free, need);
}

DataError scratch_failure(const ScratchShard& s, int error, const std::string& fix) {
  return DataError(fmt::format("{}: writing this run's scratch failed: {} (pass 1 keeps the text's token ids there, 4 "
                               "bytes a token, until the shards are made): {}",
                               s.path.string(), std::strerror(error), fix));
}

// The figures of a scratch shard that would hold `doc` alone (nothing written).
ScratchShard alone(const Document& doc, int64_t seq_len) {
  ScratchShard s;
  for (const auto& sentence : doc) s.tokens += static_cast<int64_t>(sentence.size());
  s.chunks = std::max<int64_t>(1, (s.tokens + seq_len - 4) / (seq_len - 3));
  s.sentences = static_cast<int64_t>(doc.size());
  s.documents = 1;
  return s;
}

// (A failed write leaves s.out failed, errno saying why.)
void append(ScratchShard& s, const Document& doc, int64_t seq_len) {
  auto u32 = [&](uint32_t v) { s.out.write(reinterpret_cast<const char*>(&v), 4); };
  u32(static_cast<uint32_t>(doc.size()));
  for (const auto& sentence : doc) {
    u32(static_cast<uint32_t>(sentence.size()));
    for (int64_t id : sentence) {
      const int32_t v = static_cast<int32_t>(id);
      s.out.write(reinterpret_cast<const char*>(&v), 4);
    }
    s.tokens += static_cast<int64_t>(sentence.size());
  }
  int64_t tokens = 0;
  for (const auto& sentence : doc) tokens += static_cast<int64_t>(sentence.size());
  s.chunks += std::max<int64_t>(1, (tokens + seq_len - 4) / (seq_len - 3));
  s.sentences += static_cast<int64_t>(doc.size());
  ++s.documents;
}

std::vector<Document> read_scratch(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<Document> docs;
  uint32_t n = 0;
  while (in.read(reinterpret_cast<char*>(&n), 4)) {
    Document& doc = docs.emplace_back(n);
    for (auto& sentence : doc) {
      uint32_t length = 0;
      in.read(reinterpret_cast<char*>(&length), 4);
      std::vector<int32_t> ids(length);
      in.read(reinterpret_cast<char*>(ids.data()), static_cast<std::streamsize>(length) * 4);
      sentence.assign(ids.begin(), ids.end());
    }
    if (!in) throw DataError(fmt::format("{}: a scratch file of this run is cut short (disk full?)", path.string()));
  }
  return docs;
}

// What pass 2 holds for a shard, at most: its documents (8-byte ids, a vector per sentence) and
// its examples — dupe_factor copies, each of about twice its chunks (a random next sentence puts
// the rest of a chunk back), an example taking some 300 bytes of vectors and their allocations
// plus 16 per prediction and per token (id and segment, 8 bytes each; the random next sentences
// add half the tokens again, the vectors' spare capacity more: 40 a token) — a block of padded
// rows being written, and the shard's file, made in memory before it is written out (gzip'd rows:
// under seq_len + 8 x predictions bytes an example; 3.5 GB of shards held 31.9 M examples at seq
// 128 and 20 predictions, 110 bytes each). Measured: 500 MiB resident for a shard of 1.9M tokens
// on bert-tiny's settings, estimated 566 MiB before the file in memory (docs/data.md).
// A shard's file open in pass 1, with its stream's buffer.
constexpr uint64_t kPerOpenShard = 16 << 10;

uint64_t shard_bytes(const ScratchShard& s, const ExampleOptions& o) {
  const auto dupe = static_cast<uint64_t>(o.dupe_factor);
  const uint64_t examples = dupe * 2 * static_cast<uint64_t>(s.chunks);
  const auto seq = static_cast<uint64_t>(o.max_seq_length), predictions = static_cast<uint64_t>(o.max_predictions_per_seq);
  return static_cast<uint64_t>(s.tokens) * 8 + static_cast<uint64_t>(s.sentences) * 40 +
         examples * (300 + 16 * predictions) + dupe * static_cast<uint64_t>(s.tokens) * 40 + 4096 * seq * 6 +
         examples * (seq + 8 * predictions);
}

// Removes the scratch folder however the run ends.
// What a folder named as the scratch holds that a run never writes there (it writes shard files
// only: shard-N.ids, shard-N.hdf5, their temporaries and checksums): a folder, a link, a file of
// another name.
std::vector<std::string> not_scratch_files(const std::filesystem::path& scratch) {
  auto own = [](std::string_view name) {  // (.)shard-<digits>.ids or .hdf5, then any suffix
    if (name.starts_with('.')) name.remove_prefix(1);
    if (!name.starts_with("shard-")) return false;
    name.remove_prefix(6);
    const size_t digits = name.find_first_not_of("0123456789");
    if (digits == 0 || digits == std::string_view::npos) return false;
    name.remove_prefix(digits);
    return name.starts_with(".ids") || name.starts_with(".hdf5");
  };
  std::vector<std::string> other;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(scratch, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_symlink(ec) || !entry.is_regular_file(ec) || !own(name)) other.push_back(name);
  }
  std::sort(other.begin(), other.end());
  return other;
}

struct ScratchFolder {
  std::filesystem::path path;
  ~ScratchFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

int thread_count(int asked) {
  return asked > 0 ? asked : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

// A folder of shards inside the folder given, whose shards would be left out (only the folder given
// is read). Moving them up works only into a folder that holds no text (a run reads shards or text,
// not both), and only under names not taken there.
[[noreturn]] void refuse_inner_shard_folder(const std::filesystem::path& folder, const std::filesystem::path& inner,
                                            const std::vector<std::filesystem::path>& shards,
                                            const std::vector<std::filesystem::path>& text) {
  const std::string head = fmt::format("{}: a folder of shards inside {}: only the folder given is read, so its shards "
                                       "would be left out",
                                       inner.string(), folder.string());
  if (!text.empty())
    throw DataError(fmt::format("{}; {} holds text ({}), and a run reads shards or text, not both: give the shard "
                                "folder itself (--data {}) to train on its shards, or move it out of {} to train on "
                                "the text",
                                head, folder.string(), text.front().filename().string(),
                                support::shell_word(inner.string()), folder.string()));
  if (!shards.empty())
    throw DataError(fmt::format("{}; {} holds shards of its own ({}): move the inner ones up beside them under names "
                                "not taken there (a set's shards are found by their record, not their names), or "
                                "give each folder to a run of its own",
                                head, folder.string(), shards.front().filename().string()));
  throw DataError(fmt::format("{}: give that folder instead (--data {}), or move its shards up into {}", head,
                              support::shell_word(inner.string()), folder.string()));
}

// Whether a process holds `path`'s exclusive flock (a run's .bertc-lock, prepare-data's own). (data/
// depends on no other layer of bertc: support/file_lock.h's twin, for train/.)
bool lock_held(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  return held;
}

}  // namespace

void refuse_folder_being_prepared(const std::filesystem::path& folder) {
  if (lock_held(folder / ".prepare-lock"))
    throw DataError(fmt::format("{}: a bertc prepare-data is writing its shards into this folder now: wait for it to "
                                "finish, then train on the folder",
                                folder.string()));
}

std::vector<std::filesystem::path> shard_files(const std::filesystem::path& folder, std::vector<std::string>* left_out) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec)) return files;
  auto is_shard = [&](const std::filesystem::path& p) {
    const std::string ext = support::ascii_lower(p.extension().string());
    return ext == ".hdf5" || ext == ".h5";
  };
  // Every entry that looks like a shard, its checksum or text is read or refused: none is left out
  // without a word.
  std::vector<std::filesystem::path> text;
  std::filesystem::path inner_shards;  // a folder of shards inside this one (the first found)
  for (const auto& e : std::filesystem::directory_iterator(folder)) {
    const std::string name = e.path().filename().string(), ext = support::ascii_lower(e.path().extension().string());
    // bertc's own temporaries and a run's scratch (a killed run's too): never data
    if (name.starts_with(".") && (name.find(".tmp") != std::string::npos || name.starts_with(".prepare-"))) continue;
    if (name.starts_with(".")) {
      if (left_out) left_out->push_back(name + " (hidden)");
      continue;
    }
    if (support::ascii_lower(name).ends_with(".txt") || support::ascii_lower(name).ends_with(".txt.gz")) text.push_back(e.path());
    if (e.is_directory(ec) && !is_shard(e.path()) && ext != ".xxh3") {
      for (const auto& inner : std::filesystem::directory_iterator(e.path(), ec))
        if (is_shard(inner.path()) && inner_shards.empty()) inner_shards = e.path();
      if (left_out) left_out->push_back(name + "/ (a folder)");
      continue;
    }
    if (ext == ".xxh3") {
      if (!e.is_regular_file(ec))
        throw DataError(fmt::format("{}: named as a shard's checksum but not a file ({}): put the checksum file back "
                                    "(bertc prepare-data writes it), or remove it and its shard is read unchecked",
                                    e.path().string(), e.is_directory(ec) ? "a folder" : "a broken link or special file"));
      // A checksum without its shard: the shard was deleted or moved, and the set is short of it.
      const std::filesystem::path shard = e.path().parent_path() / e.path().stem();
      // (Only bertc writes checksums, and a set it made trains whole: deleting the checksum would
      // only lead to the set's refusal.)
      if (!std::filesystem::exists(shard, ec))
        throw DataError(fmt::format("{}: a shard's checksum, and its shard {} is missing: its examples would be left "
                                    "out. Put the shard back beside the others; to train on part of some text on "
                                    "purpose, prepare that part as shards of its own (bertc prepare-data CONFIG "
                                    "--input PART -o NEW_DIR)",
                                    e.path().string(), shard.filename().string()));
      continue;
    }
    if (!is_shard(e.path())) {
      if (left_out && !support::ascii_lower(name).ends_with(".txt") && !support::ascii_lower(name).ends_with(".txt.gz")) left_out->push_back(name);
      continue;
    }
    if (!e.is_regular_file(ec))
      throw DataError(fmt::format("{}: named as a shard but not a file ({}): its examples would be left out; put the "
                                  "shard file back, or move it out of the folder",
                                  e.path().string(), e.is_directory(ec) ? "a folder" : "a broken link or special file"));
    files.push_back(e.path());
  }
  // Said once the whole folder is seen: the advice that works depends on what else it holds.
  if (!inner_shards.empty()) refuse_inner_shard_folder(folder, inner_shards, files, text);
  if (!files.empty() && !text.empty())
    throw DataError(fmt::format("{}: holds shards and text ({}): a run reads one or the other, and the text would be "
                                "left out: prepare it into shards of its own (bertc prepare-data CONFIG --input TEXT -o "
                                "DIR), or move it out of the folder",
                                folder.string(), text.front().filename().string()));
  if (left_out) std::sort(left_out->begin(), left_out->end());
  // Shorter names first: shard-100000 after shard-99999 (plain name order would put it before shard-10001).
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) {
    const std::string x = a.filename().string(), y = b.filename().string();
    return x.size() != y.size() ? x.size() < y.size() : x < y;
  });
  return files;
}

namespace {

// How to let a process open `needed` files, beside fewer shards: the soft limit raised up to the
// hard one by anyone, the hard one by root up to the kernel's ceiling (fs.nr_open); past that,
// nothing (the advice of a limit no one could set was given).
std::string raise_open_files_advice(uint64_t needed, const rlimit& files) {
  uint64_t ceiling = 1 << 20;  // (Linux's default fs.nr_open, where the file cannot be read)
  if (std::ifstream nr_open("/proc/sys/fs/nr_open"); nr_open) nr_open >> ceiling;
  if (files.rlim_max == RLIM_INFINITY || needed <= files.rlim_max)
    return fmt::format(", or raise the limit (ulimit -n {})", needed);
  if (needed <= ceiling)
    return fmt::format(", or have the hard limit of {} raised to {} (root's ulimit -Hn, nofile in "
                       "/etc/security/limits.conf, or a container's --ulimit nofile) and then the limit (ulimit -n {})",
                       files.rlim_max, needed, needed);
  return fmt::format(" (no process here may open {}: the system's most is {}, fs.nr_open)", needed, ceiling);
}

}  // namespace

PrepareReport prepare_shards(const PrepareOptions& o, const Tokenizer& tokenizer, const Vocab& vocab,
                             const PrepareCallbacks& callbacks) {
  const auto& progress = callbacks.progress;
  const auto& note = callbacks.note;
  // Asked between lines, between a round's documents and between shards; the throw takes what was
  // made with it (the scratch, the lock, a folder this run made: their destructors below). `where`
  // is made only for the throw.
  auto stop_if_asked = [&](const auto& where) {
    if (const int signal = stop_asked(callbacks.stop_requested)) throw Stopped(signal, where());
  };
  if (!hdf5_available())
    throw DataError("this bertc was built without HDF5 (BERTC_HDF5 off, as the static GPU test build is), which shards "
                    "are written with: build it with libhdf5-dev (scripts/setup.sh installs it)");
  if (o.shards < 1) throw DataError("--shards must be at least 1");
  // Pass 1 keeps a file open per shard, with its stream's buffer: checked before any is made (ten
  // million shards took 5.8 GB under --memory-mb 1, then met the open-file limit).
  if (rlimit files{}; ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY &&
                      static_cast<uint64_t>(o.shards) + 64 > files.rlim_cur)
    throw DataError(fmt::format("--shards {}: making them keeps a file open per shard, and the open-file limit is {} "
                                "(ulimit -n): use --shards {} or fewer{}",
                                o.shards, files.rlim_cur, std::max<int64_t>(1, static_cast<int64_t>(files.rlim_cur) - 64),
                                raise_open_files_advice(static_cast<uint64_t>(o.shards) + 64, files)));
  // The least the bound may be: a file open per shard with its buffer, and the block of rows a
  // shard is written from. Said once, with one figure that is enough (the two were checked apart,
  // each advising a bound the other then refused, and "fewer shards" of one shard).
  if (static_cast<uint64_t>(o.shards) * kPerOpenShard + shard_bytes(ScratchShard{}, o.examples) > o.memory_bytes) {
    const uint64_t open = static_cast<uint64_t>(o.shards) * kPerOpenShard, rows = shard_bytes(ScratchShard{}, o.examples);
    const uint64_t fewest_mib = (open + rows + (uint64_t{1} << 20) - 1) >> 20;
    const uint64_t shards_that_fit = o.memory_bytes > rows ? (o.memory_bytes - rows) / kPerOpenShard : 0;
    throw DataError(fmt::format("--shards {} under --memory-mb {:g}: making them keeps a file open per shard, about {} "
                                "KiB with their buffers, and a shard is written from a block of rows of about {} KiB: "
                                "{}raise --memory-mb to {} or more",
                                o.shards, static_cast<double>(o.memory_bytes) / double(1 << 20), open >> 10, rows >> 10,
                                shards_that_fit >= 1 && shards_that_fit < static_cast<uint64_t>(o.shards)
                                    ? fmt::format("use --shards {} or fewer, or ", shards_that_fit)
                                    : "",
                                fewest_mib));
  }
  if (o.examples.max_seq_length < 5) throw DataError("seq_len must leave room for [CLS] A [SEP] B [SEP] (5 at least)");
  const std::vector<std::filesystem::path> files = text_files(o.input, callbacks.note, "--input");
  std::error_code is_file;
  if (std::filesystem::exists(o.output, is_file) && !std::filesystem::is_directory(o.output, is_file))
    throw DataError(fmt::format("{} is a file: --output names a folder for the shards", o.output.string()));
  if (std::filesystem::is_directory(o.input, is_file) &&
      resolved(o.input) == resolved(o.output))
    throw DataError(fmt::format("{}: is the --input folder, and shards written among the text would make a folder that "
                                "no run reads (a run reads shards or text, not both): choose another --output",
                                o.output.string()));
  // (Any folder of text, not only --input's: no run reads a folder of shards and text.)
  if (const std::optional<std::filesystem::path> text =
          std::filesystem::is_directory(o.output, is_file) ? text_file_in(o.output) : std::nullopt)
    throw DataError(fmt::format("{}: holds text ({}), and shards written among it would make a folder that no run "
                                "reads (a run reads shards or text, not both): choose an empty (or new) folder for "
                                "--output",
                                o.output.string(), text->filename().string()));
  if (!shard_files(o.output).empty())
    throw DataError(fmt::format("{} already holds shards: choose an empty (or new) folder for --output, so that no "
                                "shard of another run is overwritten or mixed in",
                                o.output.string()));
  // A refused, failed or stopped run leaves no folder it made (an empty one would pass for a run's
  // output) — but never takes what others put there meanwhile: its own shards go (the folder held
  // none when it began), then each folder it made, from the innermost, only when empty.
  struct MadeFolder {
    std::filesystem::path path, output;
    bool made = false, kept = false;
    ~MadeFolder() {
      if (!made || kept) return;
      std::error_code ec;
      try {
        for (const std::filesystem::path& shard : shard_files(output)) {
          std::filesystem::remove(shard, ec);
          std::filesystem::remove(shard.string() + ".xxh3", ec);
        }
      } catch (const std::exception&) {  // (an odd entry: left, with the folder)
      }
      // (from the innermost; one never made, as a name too long, is not there; a folder holding
      // another's file stops the walk, and keeps the folders around it)
      for (std::filesystem::path p = output;; p = p.parent_path()) {
        const bool there = std::filesystem::exists(p, ec);
        if (there && !std::filesystem::remove(p, ec)) break;
        if (p == path || p.empty() || p == p.parent_path()) break;
      }
    }
  } made;
  made.output = o.output;
  // (the outermost folder on the way that is not there yet: --output a/b/c with no a makes a too)
  std::error_code exists;
  for (std::filesystem::path p = o.output; !p.empty() && p != p.parent_path() && !std::filesystem::exists(p, exists);
       p = p.parent_path())
    made.path = p, made.made = true;
  std::filesystem::create_directories(o.output);
  // A training run's folder (its .bertc-lock held) is no place for shards: its checkpoints would be
  // mixed in, and a stop would find files it did not make.
  if (lock_held(o.output / ".bertc-lock"))
    throw DataError(fmt::format("{}: a bertc train is using this folder as its run folder now: choose another "
                                "--output for the shards",
                                o.output.string()));
  // One run into a folder at a time: two would share the scratch and each other's shards.
  const std::filesystem::path lock_path = o.output / ".prepare-lock";
  const int lock = ::open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (lock < 0 && errno == EISDIR)
    throw DataError(fmt::format("{}: a folder, where bertc prepare-data keeps its lock file: it is not "
                                "prepare-data's; move it out of the folder",
                                lock_path.string()));
  if (lock < 0 || ::flock(lock, LOCK_EX | LOCK_NB) != 0)
    throw DataError(fmt::format("{}: another bertc prepare-data is writing into this folder (or it cannot be locked: "
                                "{}): wait for it, or choose another --output",
                                o.output.string(), std::strerror(errno)));
  // (prepare-data's lock is an empty file: one holding bytes is someone else's, which the run's end
  // would remove)
  if (struct stat held; ::fstat(lock, &held) == 0 && held.st_size > 0) {
    ::close(lock);
    throw DataError(fmt::format("{}: holds {} bytes, and bertc prepare-data's lock is an empty file: it is not "
                                "prepare-data's; move it out of the folder (prepare-data locks the folder under that "
                                "name)",
                                lock_path.string(), held.st_size));
  }
  struct Unlock {
    int fd;
    std::filesystem::path path;
    ~Unlock() {
      std::error_code ec;
      std::filesystem::remove(path, ec);
      ::close(fd);
    }
  } unlock{lock, lock_path};
  const auto began = Clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(Clock::now() - began).count(); };
  const int threads = thread_count(o.threads);
  PrepareProgress p;
  p.shards = o.shards;
  for (const auto& f : files) p.bytes_total += std::filesystem::file_size(f);
  auto last_said = Clock::now();
  auto tell = [&](bool now) {
    if (!progress || (!now && Clock::now() - last_said < std::chrono::milliseconds(500))) return;
    last_said = Clock::now();
    p.seconds = seconds();
    progress(p);
  };

  // Pass 1: rounds of whole documents (text of at most round_bytes), tokenized on every core and
  // appended in order: document d to shard d mod N.
  // The scratch (a killed run's too) goes when the run ends; the shards are made in it and moved
  // into the folder together at the end, so that a killed run leaves no shards that would pass
  // for a smaller corpus.
  const std::filesystem::path scratch_path = o.output / ".prepare-scratch";
  std::error_code stale;
  if (std::filesystem::is_symlink(scratch_path, stale)) {
    std::filesystem::remove(scratch_path, stale);  // (it makes no links: the link goes, never what it names)
  } else if (std::filesystem::exists(scratch_path, stale)) {  // (a run ended at once, or killed, left it)
    // (only a folder of what a run writes there: one holding anything else is not its scratch)
    if (const std::vector<std::string> other = not_scratch_files(scratch_path); !other.empty())
      throw std::runtime_error(fmt::format(
          "{}: named as the scratch a stopped bertc prepare-data leaves, but it holds {}, which prepare-data never "
          "writes there: nothing was removed; move {} (or the folder) out of the way",
          scratch_path.string(), fmt::join(other, ", "), other.size() == 1 ? "it" : "them"));
    if (note)
      note(fmt::format("removed the scratch a stopped run left in {} ({} MiB)", o.output.string(),
                       bytes_under(scratch_path) >> 20));
    std::filesystem::remove_all(scratch_path, stale);
  }
  ScratchFolder scratch{scratch_path};
  std::filesystem::create_directories(scratch.path);
  std::vector<ScratchShard> shards(static_cast<size_t>(o.shards));
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> text_hash(XXH3_createState(), XXH3_freeState);
  XXH3_64bits_reset(text_hash.get());  // (of the documents' tokens, in order: the shard set's id)
  for (size_t s = 0; s < shards.size(); ++s) {
    shards[s].path = scratch.path / fmt::format("shard-{:05d}.ids", s);
    shards[s].out.open(shards[s].path, std::ios::binary);
    if (!shards[s].out)
      throw DataError(fmt::format("{}: cannot be created: {}{}", shards[s].path.string(), std::strerror(errno),
                                  errno == EMFILE || errno == ENFILE
                                      ? " (a file a shard is open in pass 1: fewer --shards, or a higher `ulimit -n`)"
                                      : ""));
  }
  // A round's text takes about 7 times its size in memory (lines as strings, then token vectors:
  // measured 340 MiB resident for rounds of 46 MiB). A round ends at the first document boundary
  // past round_bytes, and a document may hold a sixteenth of the bound at most (round_bytes is no
  // more): a round is under an eighth of the bound, under 7/8 of the bound in memory.
  const uint64_t round_bytes = std::clamp<uint64_t>(o.memory_bytes / 16, 1 << 20, 64 << 20);
  const uint64_t document_limit = std::max<uint64_t>(o.memory_bytes / 16, 1 << 20);
  const std::string larger_bound = "or, if it is one document, raise --memory-mb to 16 times its size or more (a "
                                   "document may take a sixteenth of the bound)";
  auto read_percent = [&] {
    return 100.0 * static_cast<double>(p.bytes_read) / static_cast<double>(std::max<uint64_t>(p.bytes_total, 1));
  };
  // The room the whole run needs, from what pass 1 has read so far: the scratch, 4 bytes a token,
  // a sentence and a document (read_scratch's layout), grows with the text; a shard takes at most
  // about 4 bytes a token of each of the dupe_factor copies made of it (measured: 3.4 at seq_len
  // 512 on the bundled corpus's short documents, 2.7 at 64; under 1 where examples fill their
  // sequences, as 3.5 GB of shards for 31.9 M examples of 128 tokens).
  // `unwritten`: tokens read but not yet in the scratch.
  auto room_so_far = [&](const ScratchShard& unwritten) {
    const double read = std::max(
        1e-3, static_cast<double>(p.bytes_read) / static_cast<double>(std::max<uint64_t>(p.bytes_total, 1)));
    uint64_t written = 4 * static_cast<uint64_t>(unwritten.tokens), tokens = static_cast<uint64_t>(unwritten.tokens);
    for (const ScratchShard& s : shards) {
      written += 4 * static_cast<uint64_t>(s.documents + s.sentences + s.tokens);
      tokens += static_cast<uint64_t>(s.tokens);
    }
    const auto copies = static_cast<uint64_t>(o.examples.dupe_factor);
    return Room{static_cast<uint64_t>(static_cast<double>(written) / read),
                static_cast<uint64_t>(static_cast<double>(4 * copies * tokens) / read), bytes_under(scratch.path)};
  };
  auto tokenizing = [&] { return fmt::format("while tokenizing ({:.0f}% of the text read)", read_percent()); };
  std::vector<std::vector<std::string>> texts(1);  // the round's documents, as lines
  uint64_t round_size = 0, document_size = 0, read_before = 0;
  int64_t next_document = 0;
  int64_t unknown_tokens = 0;
  bool capitals = false;  // (whether the text has a capital: unknown_note's letter-case advice)
  auto flush_round = [&] {
    if (texts.back().empty()) texts.pop_back();
    for (size_t d = 0; d < texts.size() && !capitals; ++d)
      for (const std::string& line : texts[d])
        if ((capitals = has_capital(line))) break;
    std::vector<Document> docs(texts.size());
    std::vector<std::thread> pool;
    std::exception_ptr failed;
    std::mutex failure;
    const size_t per = (texts.size() + static_cast<size_t>(threads) - 1) / static_cast<size_t>(threads);
    for (size_t begin = 0; begin < texts.size(); begin += per)
      pool.emplace_back([&, begin] {
        try {
          // (a round takes seconds: a signal is honoured between its documents)
          for (size_t d = begin; d < std::min(texts.size(), begin + per) && !stop_asked(callbacks.stop_requested); ++d)
            for (const std::string& line : texts[d])
              if (std::vector<int64_t> ids = tokenizer.encode(line); !ids.empty()) docs[d].push_back(std::move(ids));
        } catch (...) {
          std::lock_guard lock(failure);
          failed = std::current_exception();
        }
      });
    for (std::thread& t : pool) t.join();
    if (failed) std::rethrow_exception(failed);
    stop_if_asked([&] {  // (before a round left part-made goes into the shards)
      return fmt::format("while tokenizing a round of {} documents ({:.0f}% of the text read)", texts.size(),
                         read_percent());
    });
    for (auto it = docs.begin(); it != docs.end(); ++it) {
      const Document& doc = *it;
      if (doc.empty()) continue;
      ScratchShard& shard = shards[static_cast<size_t>(next_document % o.shards)];
      append(shard, doc, o.examples.max_seq_length);
      if (!shard.out) {
        const int error = errno;
        ScratchShard unwritten;  // (the rest of the round: read, so counted in the share read)
        for (auto rest = std::next(it); rest != docs.end(); ++rest)
          for (const auto& sentence : *rest) unwritten.tokens += static_cast<int64_t>(sentence.size());
        throw scratch_failure(shard, error, write_fix(error, o.output, room_so_far(unwritten)));
      }
      // Found now, not after reading the rest of the corpus. A document is never split between
      // shards: one too large alone needs a larger bound, not more shards (a bound under what any
      // shard needs was refused before pass 1).
      if (const uint64_t bytes = shard_bytes(alone(doc, o.examples.max_seq_length), o.examples); bytes > o.memory_bytes)
        throw DataError(fmt::format("document {} ({} sentences, {} tokens) alone needs about {} MiB while its shard is "
                                    "made, more than the memory bound of {} MiB, and a document is never split "
                                    "between shards: raise --memory-mb to {} or more, or split it into documents (a "
                                    "blank line between them)",
                                    next_document + 1, doc.size(), alone(doc, o.examples.max_seq_length).tokens,
                                    bytes >> 20, o.memory_bytes >> 20, (bytes >> 20) + 1));
      if (const uint64_t bytes = shard_bytes(shard, o.examples); bytes > o.memory_bytes) {
        // (the shard's documents grow with the text still to read: the figures are projected to all
        // of it, so that one change of either option is enough, with half again for documents that
        // differ in size along the text: the bundled corpus's later ones are longer)
        const double left_in_round =
            static_cast<double>(round_size) * static_cast<double>(docs.end() - it - 1) / static_cast<double>(docs.size());
        const double read = std::max(0.01, (static_cast<double>(p.bytes_read) - left_in_round) /
                                               static_cast<double>(std::max<uint64_t>(p.bytes_total, 1)));
        const uint64_t fixed = shard_bytes(ScratchShard{}, o.examples);  // (the rows' block: not per document)
        const double documents_part = static_cast<double>(bytes - fixed) / read * 1.5;  // (this shard's, at the end)
        const uint64_t open = static_cast<uint64_t>(o.shards) * kPerOpenShard;  // (the open shards' buffers too)
        const auto whole = fixed + open + static_cast<uint64_t>(documents_part);
        // (more shards split the documents' part; each keeps the fixed part)
        const auto shards_needed = std::max<int64_t>(
            o.shards + 1, static_cast<int64_t>(std::ceil(documents_part * static_cast<double>(o.shards) /
                                                         static_cast<double>(o.memory_bytes - fixed))));
        // (more shards keep more files open: where their buffers would pass the bound, only a larger
        // bound helps, and "more shards" sent the user back to the open-file check's "fewer")
        const bool more_fit = static_cast<uint64_t>(shards_needed) * kPerOpenShard + fixed +
                                  static_cast<uint64_t>(documents_part / static_cast<double>(shards_needed)) <=
                              o.memory_bytes;
        throw DataError(fmt::format(
            "shard {} alone would take over {} MiB while it is made (its {} documents so far, {:.0f}% of the text "
            "read), more than the memory bound of {} MiB: {}raise --memory-mb to about {} (projected from the text "
            "read so far{})",
            next_document % o.shards, bytes >> 20, shard.documents, 100 * read, o.memory_bytes >> 20,
            more_fit ? fmt::format("use about {} --shards, or ", shards_needed) : "", (whole >> 20) + 1,
            read < 0.25 ? "; from this little, documents that differ along the text may need more" : ""));
      }
      ++next_document;
      ++p.documents;
      for (const auto& sentence : doc) {
        p.tokens += static_cast<int64_t>(sentence.size());
        unknown_tokens += std::count(sentence.begin(), sentence.end(), vocab.unk());
        XXH3_64bits_update(text_hash.get(), sentence.data(), sentence.size() * sizeof(sentence[0]));
      }
      XXH3_64bits_update(text_hash.get(), "|", 1);  // (a document's end)
    }
    texts.assign(1, {});
    round_size = 0;
  };
  auto end_document = [&] {
    if (!texts.back().empty()) texts.emplace_back();
    document_size = 0;
    if (round_size >= round_bytes) flush_round();
  };
  FileTexts file_texts;
  for (const auto& file : files) {
    LineReader reader(file, document_limit, note, larger_bound);
    std::string line;
    while (reader.next(line)) {
      file_texts.line(line);
      const std::string text = trim_line(line);
      if (text.empty()) {
        end_document();
      } else {
        round_size += text.size();
        document_size += text.size();
        texts.back().push_back(text);
        if (document_size > document_limit)
          throw DataError(fmt::format("{}: a document of over {} MiB (no blank line in it, up to line {}): documents "
                                      "are separated by blank lines; put them in, {}",
                                      file.string(), document_limit >> 20, reader.figures().lines, larger_bound));
      }
      p.bytes_read = read_before + reader.offset();
      tell(false);
      stop_if_asked(tokenizing);
    }
    end_document();  // a file ends its last document
    file_texts.end(file, note);
    read_before += std::filesystem::file_size(file);
  }
  flush_round();
  stop_if_asked([] { return std::string("after tokenizing (the text read, no shard made yet)"); });
  p.bytes_read = p.bytes_total;
  tell(true);
  for (ScratchShard& s : shards) {
    s.out.close();  // (its last buffer written now: a full disk shows here)
    if (!s.out) {
      const int error = errno;
      throw scratch_failure(s, error, write_fix(error, o.output, room_so_far({})));
    }
  }
  texts.clear();
  texts.shrink_to_fit();
  ::malloc_trim(0);  // pass 1's rounds back to the system: pass 2 has the whole bound
  if (const auto said = unknown_note(unknown_tokens, p.tokens, tokenizer, capitals, o.input); said && note) note(*said);
  if (next_document == 0)
    throw DataError(fmt::format("{}: no text: no document in it (empty, blank lines only, or nothing the tokenizer "
                                "keeps). prepare-data reads UTF-8 text, one sentence a line, a blank line between "
                                "documents: give such text with --input or [train] data",
                                o.input.string()));
  // A shard's random next sentences come from another of its documents (each shard stands alone):
  // with one, every "random" B is from the same document, and half the labels are wrong.
  constexpr int64_t kShardDocuments = TextShards::kMinimumShardDocuments;
  if (next_document < kShardDocuments)
    throw DataError(fmt::format("{}: {} document: next-sentence prediction takes its random sentences from another "
                                "document, and there is none: give text of {} documents at least (a blank line "
                                "between documents)",
                                o.input.string(), next_document, kShardDocuments));
  if (next_document < o.shards * kShardDocuments)
    throw DataError(fmt::format("{}: {} document(s) for {} shards: every shard needs {} at least, for its random next "
                                "sentences to come from another document (use --shards {} or fewer)",
                                o.input.string(), next_document, o.shards, kShardDocuments,
                                next_document / kShardDocuments));

  // Pass 2: as many shards at once as fit the memory bound. Each shard records the vocabulary by
  // its absolute path too: what a run given other shards is told to train with.
  std::error_code absolute_ec;
  const std::string absolute_vocab = std::filesystem::absolute(vocab.source(), absolute_ec).string();
  // This run's shards as a set of their own (a folder missing one of them is refused): an id from
  // what made them, the documents' tokens and the settings (the same text and settings make the
  // same shards, bit for bit, so the same id, whatever file the text came in).
  const std::string text_id = fmt::format("{:016x}", XXH3_64bits_digest(text_hash.get()));
  const std::string id_source =
      fmt::format("{} {} {} {} {} {} {} {}", text_id, vocab.xxh3(), o.examples.seed,
                  o.shards, o.examples.max_seq_length, o.examples.max_predictions_per_seq, o.examples.masked_lm_prob,
                  o.examples.dupe_factor);
  const std::string set = fmt::format("{:016x}", XXH3_64bits(id_source.data(), id_source.size()));
  PrepareReport report;
  uint64_t largest = 0;
  for (const ScratchShard& s : shards) largest = std::max(largest, shard_bytes(s, o.examples));
  if (largest > o.memory_bytes)
    throw DataError(fmt::format("the largest shard would take about {} MiB while it is made, more than the memory bound "
                                "of {} MiB: use more --shards (about {}), or raise --memory-mb",
                                largest >> 20, o.memory_bytes >> 20,
                                o.shards * static_cast<int64_t>((largest + o.memory_bytes - 1) / o.memory_bytes)));
  report.shards_at_once = static_cast<int>(std::clamp<uint64_t>(o.memory_bytes / std::max<uint64_t>(largest, 1), 1,
                                                                static_cast<uint64_t>(threads)));
  report.planned_peak_bytes = largest * static_cast<uint64_t>(report.shards_at_once);
  p.pass = 2;
  std::atomic<int64_t> next_shard{0}, done{0}, examples{0}, largest_count{0}, tokens_put{0}, tokens_cut{0}, rows{0};
  std::atomic<bool> stopping{false};
  std::exception_ptr failed;
  std::vector<std::thread> pool;
  for (int t = 0; t < report.shards_at_once; ++t)
    pool.emplace_back([&] {
      try {
        for (int64_t s; !stopping && (s = next_shard++) < o.shards;) {
          const std::vector<Document> docs = read_scratch(shards[static_cast<size_t>(s)].path);
          ExampleOptions eo = o.examples;
          eo.seed = shard_seed(o.examples.seed, s);
          ExampleFigures figures;
          const std::vector<Example> made = create_examples(docs, vocab, eo, &figures);
          tokens_put += figures.tokens, tokens_cut += figures.tokens_cut;
          std::optional<RowPlan> plan;
          if (o.rows) {  // (the rows the trainer would place them in, recorded: data/shard_examples.h)
            std::vector<ExampleSize> sizes;
            for (const Example& e : made)
              sizes.push_back({static_cast<int64_t>(e.tokens.size()), static_cast<int64_t>(e.masked_positions.size())});
            plan = RowPlan{*o.rows, pack_rows(sizes, *o.rows)};
            rows += static_cast<int64_t>(plan->rows.size());
          }
          write_shard(scratch.path / fmt::format("shard-{:05d}.hdf5", s), made, eo.max_seq_length,
                      eo.max_predictions_per_seq, vocab.pad(),
                      ShardRecord{vocab.xxh3(), vocab.size(), -1, eo.masked_lm_prob, tokenizer.lower_case(),
                                  absolute_vocab, set, s, o.shards, text_id},
                      plan ? &*plan : nullptr);
          examples += static_cast<int64_t>(made.size());
          int64_t seen = largest_count;
          while (seen < static_cast<int64_t>(made.size()) &&
                 !largest_count.compare_exchange_weak(seen, static_cast<int64_t>(made.size()))) {
          }
          ++done;
        }
      } catch (...) {
        if (!stopping.exchange(true)) failed = std::current_exception();  // (the first failure only)
      }
    });
  int stop_signal = 0;
  while (done < o.shards && !stopping) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    p.shards_done = done, p.examples = examples;
    tell(false);
    if ((stop_signal = stop_asked(callbacks.stop_requested))) stopping = true;
  }
  for (std::thread& t : pool) t.join();
  if (failed) {  // (the shards made so far go with the scratch)
    try {
      std::rethrow_exception(failed);
    } catch (const ShardWriteFailed& e) {  // (shards differ little in size: this one's size times their count)
      const Room whole = room_so_far({});
      throw DataError(fmt::format("{}: {}", e.what(),
                                  write_fix(e.error, o.output, {whole.scratch, e.bytes * o.shards, whole.held})));
    }
  }
  if (done == o.shards) stop_signal = 0;  // (every shard made as the signal came: they are kept, said below)
  if (stop_signal)
    throw Stopped(stop_signal, fmt::format("while writing shards ({} of {} made)", done.load(), o.shards));
  for (int64_t s = 0; s < o.shards; ++s) {
    const std::string name = fmt::format("shard-{:05d}.hdf5", s);
    std::filesystem::rename(scratch.path / (name + ".xxh3"), o.output / (name + ".xxh3"));  // (its checksum)
    std::filesystem::rename(scratch.path / name, o.output / name);
  }
  p.shards_done = done, p.examples = examples;
  tell(true);
  made.kept = true;
  if (stop_asked(callbacks.stop_requested) && note)
    note("a stop signal came as the last shard was made: the shards are complete, and kept");
  report.figures = ExampleFigures{tokens_put.load(), tokens_cut.load()};
  report.documents = p.documents;
  report.tokens = p.tokens;
  for (const ScratchShard& s : shards) report.sentences += s.sentences;
  report.examples = examples;
  report.rows = rows;
  report.largest_shard_examples = largest_count;
  report.seconds = seconds();
  return report;
}

}  // namespace bertc::data
