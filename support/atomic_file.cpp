// Atomic replacement of a file: temporary, fsync, rename, fsync of the folder.
#include "support/atomic_file.h"

#include "support/file_errors.h"

#include <fcntl.h>
#include <stdio.h>  // (renameat2)
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <system_error>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace bertc::support {
namespace {

// For the crash test only: BERTC_TEST_SLOW_WRITE_MS pauses halfway through every write, so a test
// can kill the process while a temporary file is half written.
void maybe_pause_for_crash_test() {
  if (const char* ms = std::getenv("BERTC_TEST_SLOW_WRITE_MS"))
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(ms)));
}

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// The temporaries being written now, in fixed slots, so that remove_temporaries_being_written
// needs no lock or allocation: 0 free, 1 being filled in, 2 its path complete.
struct WritingSlot {
  std::atomic<int> state{0};
  char path[4096];
};
WritingSlot writing_slots[16];

// Notes `tmp` as being written while it lives (not at all when every slot is taken or the path
// is too long: the next run in the folder still sweeps such a leftover).
class BeingWritten {
 public:
  explicit BeingWritten(const std::filesystem::path& tmp) {
    const std::string& text = tmp.native();
    if (text.size() >= sizeof(WritingSlot::path)) return;
    for (WritingSlot& slot : writing_slots) {
      int free = 0;
      if (!slot.state.compare_exchange_strong(free, 1)) continue;
      std::memcpy(slot.path, text.c_str(), text.size() + 1);
      slot.state = 2;
      slot_ = &slot;
      return;
    }
  }
  ~BeingWritten() {
    if (slot_) slot_->state = 0;
  }
  BeingWritten(const BeingWritten&) = delete;
  BeingWritten& operator=(const BeingWritten&) = delete;

 private:
  WritingSlot* slot_ = nullptr;
};

}  // namespace

void remove_temporaries_being_written(void (*removed)(const char* path)) {
  for (WritingSlot& slot : writing_slots)
    if (slot.state.load() == 2 && ::unlink(slot.path) == 0 && removed) removed(slot.path);
}

std::filesystem::path temporary_beside(const std::filesystem::path& path) {
  const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : ".";
  const std::string suffix = fmt::format(".tmp.{}", ::getpid());
  std::string name = path.filename().string();
  constexpr size_t kNameMax = 255;  // (NAME_MAX of Linux's file systems)
  if (1 + name.size() + suffix.size() > kNameMax) {
    name.resize(kNameMax - 2 - suffix.size());
    while (!name.empty() && (static_cast<unsigned char>(name.back()) & 0xc0) == 0x80) name.pop_back();  // (whole UTF-8)
    if (!name.empty() && static_cast<unsigned char>(name.back()) >= 0xc0) name.pop_back();
    name += '~';
  }
  return folder / ("." + name + suffix);
}

std::vector<std::filesystem::path> missing_folders(const std::filesystem::path& folder) {
  std::vector<std::filesystem::path> missing;
  std::error_code ec;
  for (std::filesystem::path p = folder; !p.empty() && p != p.parent_path() && !std::filesystem::exists(p, ec);
       p = p.parent_path())
    missing.push_back(p);
  return missing;
}

std::filesystem::path staging_folder_for(const std::filesystem::path& to) {
  std::error_code ec;
  if (std::filesystem::is_directory(to, ec)) return to / temporary_beside(to).filename();
  return temporary_beside(to);
}

namespace {

// `from`'s files moved up into `to` (its parent), never over a name; the moved ones put back when
// one cannot go (another process made that name meanwhile): false then.
bool move_files_up(const std::filesystem::path& from, const std::filesystem::path& to) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(to, ec))
    if (entry.path().filename() != from.filename()) return false;
  std::vector<std::string> moved;
  for (const auto& entry : std::filesystem::directory_iterator(from)) {
    const std::string name = entry.path().filename().string();
    if (::renameat2(AT_FDCWD, entry.path().c_str(), AT_FDCWD, (to / name).c_str(), RENAME_NOREPLACE) == 0) {
      moved.push_back(name);
      continue;
    }
    const int error = errno;
    for (const std::string& back : moved) ::rename((to / back).c_str(), (from / back).c_str());
    if (error == EEXIST) return false;
    throw FileError(error, to, fmt::format("cannot move {} into {}", name, to.string()));
  }
  if (::rmdir(from.c_str()) != 0) {
    const int error = errno;
    throw FileError(error, to, fmt::format("cannot remove the staging folder {}", from.string()));
  }
  return true;
}

}  // namespace

bool place_folder(const std::filesystem::path& from, const std::filesystem::path& to) {
  if (from.parent_path() == to) return move_files_up(from, to);
  if (::rename(from.c_str(), to.c_str()) == 0) return true;
  const int error = errno;
  if (error == ENOTEMPTY || error == EEXIST || error == ENOTDIR) return false;
  throw FileError(error, to, fmt::format("cannot put the finished folder in place as {}", to.string()));
}

void remove_made_folders(const std::vector<std::filesystem::path>& made) {
  for (const std::filesystem::path& p : made) ::rmdir(p.c_str());  // (one not empty stays, and so do those above)
}

namespace {

enum class Placing { replace, never_replace };

void write_atomically(const std::filesystem::path& path, std::string_view bytes, bool executable, Placing placing) {
  const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : ".";
  // Never renamed over a device, a pipe or a socket: as root, the rename would replace /dev/null
  // itself with a regular file (every program on the machine then writes into it).
  if (std::error_code ec; std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec) &&
                          !std::filesystem::is_directory(path, ec))
    throw FileError(EINVAL, path, "cannot write " + path.string() + ": it is a device, a pipe or a socket, not a file");
  const std::filesystem::path tmp = temporary_beside(path);
  auto fail = [&](const std::string& step, int error = 0) {
    if (error == 0) error = errno;  // (kept in the exception: callers advise by it, room or permission)
    ::unlink(tmp.c_str());
    throw FileError(error, path, "cannot write " + path.string() + ": " + step + " failed", bytes.size());
  };
  const BeingWritten being_written(tmp);  // (a process ending at once removes it: remove_temporaries_being_written)
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, executable ? 0755 : 0644);
  if (fd < 0) fail("creating " + tmp.string());
  // Two halves, so that the crash test can stop the process between them.
  const size_t half = bytes.size() / 2;
  if (!write_all(fd, bytes.substr(0, half))) {
    ::close(fd);
    fail("write");
  }
  maybe_pause_for_crash_test();
  if (!write_all(fd, bytes.substr(half))) {
    ::close(fd);
    fail("write");
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    fail("fsync");
  }
  if (::close(fd) != 0) fail("close");
  if (placing == Placing::replace) {
    if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("rename");
  } else {
    if (::link(tmp.c_str(), path.c_str()) == 0) {
      ::unlink(tmp.c_str());
    } else {
      int error = errno;
      // A file system without hard links (vfat, exFAT, some FUSE and CIFS mounts): a rename that
      // refuses to replace does the same.
      const bool no_links = error == EPERM || error == ENOTSUP || error == EOPNOTSUPP || error == ENOSYS;
      if (!no_links || ::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) != 0) {
        if (no_links) error = errno;
        fail(error == EEXIST ? "placing it (a file of that name is there now)" : "linking it into place", error);
      }
    }
  }
  // The rename itself is durable only once the folder's entry is on disk.
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

}  // namespace

void write_file_atomically(const std::filesystem::path& path, std::string_view bytes, bool executable) {
  write_atomically(path, bytes, executable, Placing::replace);
}

void write_new_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  write_atomically(path, bytes, false, Placing::never_replace);
}

uint64_t remove_left_folder(const std::filesystem::path& folder, const std::function<bool(const std::string&)>& own,
                            const std::string& what) {
  std::vector<std::string> foreign;
  uint64_t bytes = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file(ec) || entry.is_symlink(ec) || !own(name)) foreign.push_back(name);
    else bytes += entry.file_size(ec);
  }
  if (ec) throw std::runtime_error(fmt::format("{}: cannot read the folder a stopped {} left: {}", folder.string(), what, ec.message()));
  if (!foreign.empty()) {
    std::sort(foreign.begin(), foreign.end());
    throw std::runtime_error(fmt::format(
        "{}: named as the folder a stopped {} leaves, but it holds {}, which {} never writes there: nothing was "
        "removed; move {} (or the folder) out of the way",
        folder.string(), what, fmt::join(foreign, ", "), what, foreign.size() == 1 ? "it" : "them"));
  }
  std::filesystem::remove_all(folder);
  return bytes;
}

}  // namespace bertc::support
