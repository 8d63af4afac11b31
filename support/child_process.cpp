// Child programs in groups of their own, ended with bertc (see child_process.h).
#include "support/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

extern char** environ;

namespace bertc::support {
namespace {

// The groups being waited for, in fixed slots: a signal handler reads them without a lock. More
// children at once than slots run unlisted (and could outlive a hard stop); bertc runs one per
// compiling thread.
std::array<std::atomic<pid_t>, 64> running{};
// Set by end_children_now: bertc is ending (a second signal's handler, an exit), and a child that
// dies now was killed for it, not failed.
std::atomic<bool> ending{false};

void end_at_exit() { end_children_now(); }

// A slot holding `pid` while it lives.
class Listed {
 public:
  explicit Listed(pid_t pid) {
    static const bool registered = (std::atexit(end_at_exit), true);
    (void)registered;
    for (auto& s : running) {
      pid_t none = 0;
      if (s.compare_exchange_strong(none, pid)) {
        slot_ = &s;
        return;
      }
    }
  }
  ~Listed() {
    if (slot_) slot_->store(0);
  }
  Listed(const Listed&) = delete;
  Listed& operator=(const Listed&) = delete;

 private:
  std::atomic<pid_t>* slot_ = nullptr;
};

}  // namespace

ChildEnd run_child(const std::vector<std::string>& argv, const std::filesystem::path& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);  // (a background group must not read a terminal)
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&attributes, 0);  // (a group of its own, led by the child)
  // The child hears every signal: bertc's threads block the stop signals (stop_request.cpp), and a
  // mask is inherited through exec.
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attributes, &none);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, args[0], &actions, &attributes, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (spawned != 0) return {-1, fmt::format("cannot be run: {}", std::strerror(spawned))};
  const Listed listed(pid);
  int status = 0;
  pid_t waited;
  while ((waited = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (waited < 0) return {-1, fmt::format("could not be waited for: {}", std::strerror(errno))};
  // Killed because bertc is ending at once: whoever ended it ends the process in a moment, with its
  // own words and exit status; reporting a failed child here would race that exit with another.
  if (WIFSIGNALED(status) && ending.load())
    for (;;) ::pause();
  if (WIFSIGNALED(status))
    return {-1, fmt::format("was killed by signal {} ({}; out of memory?)", WTERMSIG(status), strsignal(WTERMSIG(status)))};
  return {WEXITSTATUS(status), ""};
}

void end_children_now() {
  ending.store(true);
  for (auto& s : running)
    if (const pid_t pid = s.load(); pid > 0) ::kill(-pid, SIGKILL);  // (the group: the driver and what it ran)
}

std::vector<int> running_children() {
  std::vector<int> pids;
  for (auto& s : running)
    if (const pid_t pid = s.load(); pid > 0) pids.push_back(pid);
  return pids;
}

}  // namespace bertc::support
