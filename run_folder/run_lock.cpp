// The run folder's lock and the sweep of temporaries (see run_lock.h).
#include "support/abrupt_exit.h"
#include "run_folder/run_lock.h"

#include "data/prepare_shards.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "support/atomic_file.h"
#include "support/file_errors.h"
#include "support/safetensors.h"

#include "run_folder/stop_request.h"
#include "run_folder/train_error.h"

namespace bertc::run_folder {
namespace {

std::string contents(int fd) {
  std::string text(256, '\0');
  const ssize_t n = ::pread(fd, text.data(), text.size(), 0);
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
  return text;
}

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

// A line a lock's holder wrote: "PID on HOST" (RunFolderLock's `me`).
bool is_holder_line(const std::string& text) {
  const size_t digits = text.find_first_not_of("0123456789");
  return digits > 0 && digits != std::string::npos && text.compare(digits, 4, " on ") == 0 &&
         text.find('\n') == std::string::npos;
}

TrainError folder_in_use(const std::filesystem::path& folder, const std::string& holder) {
  return TrainError(fmt::format("{} is in use by another bertc train ({}): wait for it to end, or choose another "
                                "--checkpoint-dir",
                                folder.string(), holder.empty() ? "one just starting" : "pid " + holder));
}

}  // namespace

std::optional<std::string> lock_holder(const std::filesystem::path& file) {
  // (A shared flock is refused only while someone holds the exclusive one; O_NONBLOCK: a pipe in
  // the file's place does not wait.)
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;  // (none yet)
  const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  const std::string content = held ? contents(fd) : "";
  ::close(fd);
  if (!held) return std::nullopt;
  return content.substr(0, content.find('\n'));
}

void refuse_run_folder_in_use(const std::filesystem::path& folder) {
  if (const auto holder = lock_holder(folder / ".bertc-lock")) throw folder_in_use(folder, *holder);
}

RunFolderLock::RunFolderLock(const std::filesystem::path& folder, std::ostream& log) : folder_(folder) {
  std::error_code ec;
  made_ = !std::filesystem::exists(folder, ec);
  // The folders on the way that are not there yet: a refusal removes those it made, empty.
  const std::vector<std::filesystem::path> missing = support::missing_folders(folder);
  // (Said by what is there: a file, a pipe, a device; EEXIST's "a file" would misname a pipe.)
  if (std::string kind = std::filesystem::is_regular_file(folder, ec) ? "a file" : support::non_regular_kind(folder);
      !kind.empty() && kind != "a folder")
    throw TrainError(fmt::format("{}: {}, not a folder, so it cannot hold a run's checkpoints: choose another "
                                 "--checkpoint-dir",
                                 folder.string(), kind));
  std::filesystem::create_directories(folder, ec);
  if (ec || !std::filesystem::is_directory(folder)) {
    const int error = ec.value();
    support::remove_made_folders(missing);
    const std::string fix = error ? support::file_error_fix(error, folder) : "";
    throw TrainError(fmt::format("{}: cannot be made a run folder ({}): {}", folder.string(),
                                 ec ? ec.message() : "it is not a folder",
                                 fix.empty() ? "choose another --checkpoint-dir" : fix));
  }
  // A folder a bertc prepare-data is writing its shards into now is no run folder: a stop of that
  // prepare-data would find checkpoints it did not make.
  try {
    data::refuse_folder_being_prepared(folder);
  } catch (const data::DataError&) {
    throw TrainError(fmt::format("{}: a bertc prepare-data is writing its shards into this folder now, and a run folder "
                                 "is no place for them: choose another --checkpoint-dir",
                                 folder.string()));
  }
  const std::filesystem::path path = folder / ".bertc-lock";
  // The file stays (unlinking it would let a third run lock a new file while a second holds the
  // old one); what it holds says whether its last holder ended cleanly.
  fd_ = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (fd_ < 0 && errno == EISDIR)
    throw TrainError(fmt::format("{}: a folder, where bertc keeps the run's lock file: it is not bertc's; move it out "
                                 "of the run folder",
                                 path.string()));
  if (fd_ < 0)
    throw TrainError(fmt::format("{}: cannot be opened ({}): is the run folder writable?", path.string(),
                                 std::strerror(errno)));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int why = errno;
    const std::string content = contents(fd_), holder = content.substr(0, content.find('\n'));
    ::close(fd_);
    if (why == EWOULDBLOCK) throw folder_in_use(folder, holder);
    throw TrainError(fmt::format("{}: cannot be locked ({}): the run folder's file system must support flock",
                                 path.string(), std::strerror(why)));
  }
  // What a holder writes is "PID on HOST": anything else under the lock's name is someone's file,
  // which taking the lock over would empty.
  if (const std::string stale = contents(fd_); !stale.empty() && !is_holder_line(stale)) {
    ::close(fd_);
    fd_ = -1;
    throw TrainError(fmt::format("{}: holds '{}', and bertc's run lock holds only the pid and host of the run that "
                                 "holds it: it is not bertc's; move it out of the folder (bertc locks run folders "
                                 "under that name)",
                                 path.string(), stale.substr(0, 40)));
  } else if (!stale.empty()) {
    log << fmt::format("run folder: {} was left locked by pid {}, which ended without unlocking it (killed?): taken "
                       "over\n",
                       folder.string(), stale.substr(0, stale.find('\n')));
  }
  // Checkpoints are new files in the folder: a folder whose existing lock and metrics are writable
  // may still refuse new files (chmod 555, a read-only bind mount), found at the first checkpoint
  // after every step since was trained. Tried now, with a name the sweep of temporaries knows.
  const std::filesystem::path probe = folder / fmt::format(".bertc-write-probe.tmp.{}", ::getpid());
  if (const int fd = ::open(probe.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600); fd < 0) {
    const int why = errno;
    ::close(fd_);
    fd_ = -1;
    // (the probe's path: the fix names the folder it is in, the run folder)
    throw support::FileError(why, probe,
                             fmt::format("{}: no file can be made in this run folder, and its checkpoints are new "
                                         "files there",
                                         folder.string()));
  } else {
    ::close(fd);
    ::unlink(probe.c_str());
  }
  const std::string me = fmt::format("{} on {}\n", ::getpid(), host_name());
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size()))
    throw TrainError(fmt::format("{}: cannot be written ({}): is the disk full?", path.string(), std::strerror(errno)));
  if (made_) remove_on_hard_stop(path, folder);  // (until the run writes into it: writing())
  support::empty_on_abrupt_exit(fd_);  // (a rank stopping every rank at once ends cleanly too)
}

void RunFolderLock::writing() const { forget_on_hard_stop(); }

RunFolderLock::~RunFolderLock() {
  forget_on_hard_stop();
  if (fd_ < 0) return;
  support::forget_on_abrupt_exit(fd_);
  (void)::ftruncate(fd_, 0);
  // A run refused before it wrote anything leaves no folder it made: the lock file is unlinked
  // while still held, then the folder removed if nothing else came into it.
  std::error_code ec;
  const auto only_the_lock = [&] {
    std::filesystem::directory_iterator it(folder_, ec), end;
    return !ec && it != end && it->path().filename() == ".bertc-lock" && ++it == end;
  };
  if (made_ && only_the_lock() && std::filesystem::remove(folder_ / ".bertc-lock", ec)) ::rmdir(folder_.c_str());
  ::close(fd_);  // (releases the flock)
}

bool is_run_temporary(const std::filesystem::directory_entry& entry) {
  static const std::regex temporary(R"(\..+\.(safetensors|json|jsonl)\.tmp\.\d+)");
  std::error_code ec;
  const std::string name = entry.path().filename().string();
  if (entry.is_symlink(ec) || !entry.is_regular_file(ec) || !std::regex_match(name, temporary)) return false;
  if (name.find(".safetensors.tmp.") != std::string::npos) return support::could_be_cut_safetensors(entry.path());
  // (a JSON or JSON-lines file cut short: empty, or an object's start)
  std::ifstream in(entry.path());
  const int first = in.get();
  return first == EOF || first == '{';
}

void remove_leftover_temporaries(const std::filesystem::path& folder, std::ostream& log) {
  std::vector<std::string> removed;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (is_run_temporary(entry) && std::filesystem::remove(entry.path(), ec)) removed.push_back(name);
  }
  if (!removed.empty())
    log << fmt::format("run folder: removed {} unfinished temporary file(s) of an interrupted run: {}\n",
                       removed.size(), fmt::join(removed, ", "));
}

}  // namespace bertc::run_folder
