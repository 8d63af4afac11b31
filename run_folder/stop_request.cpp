// The stop signals into a stop request (see stop_request.h).
#include "run_folder/stop_request.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>
#include <string>
#include <mutex>
#include <thread>

#include "support/atomic_file.h"
#include "support/child_process.h"

namespace bertc::run_folder {
namespace {

// SIGXCPU: a CPU-time limit (ulimit -t, a batch system's) reached; the hard limit's SIGKILL
// follows, so the stop's checkpoint is the run's last chance.
constexpr std::array<int, 7> kStopSignals = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGXCPU, SIGPIPE};
std::atomic<int> requested{0};
std::atomic<int64_t> requested_at_ns{0};  // when the first stop signal came (CLOCK_MONOTONIC)

// (clock_gettime is async-signal-safe)
int64_t now_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

// The same signal again this soon is the same request, not a second one: timeout(1) and job
// schedulers send it to the process and then to its process group, microseconds apart, and a
// person asking twice takes longer than this.
constexpr int64_t kSameRequestNs = 250'000'000;
std::atomic<const char*> first_words{nullptr}, at_once_words{nullptr};
std::array<struct sigaction, kStopSignals.size()> previous;
struct sigaction previous_quit;

// What a hard stop removes (remove_on_hard_stop): fixed buffers, read by a signal handler.
std::atomic<bool> removal_armed{false};
char removal_lock[4096], removal_folder[4096];

// unlink and rmdir are async-signal-safe; rmdir leaves a folder that is not empty.
void remove_armed_folder() {
  if (!removal_armed.load()) return;
  ::unlink(removal_lock);
  ::rmdir(removal_folder);
}

void say(const char* words) {
  (void)!::write(STDERR_FILENO, "\nbertc: ", 8);
  (void)!::write(STDERR_FILENO, words, std::strlen(words));  // (strlen: async-signal-safe)
  (void)!::write(STDERR_FILENO, "\n", 1);
}

// What a stop signal does, from the handler or the waiting thread alike.
void on_signal(int sig) {
  int none = 0;
  // The log's reader went away (| head, a tee that died): stop as for the others, but quietly and
  // once, as every later write to the log fails the same way (its output is lost, not the run).
  if (sig == SIGPIPE) {
    requested.compare_exchange_strong(none, sig);
    return;
  }
  if (requested.compare_exchange_strong(none, sig) && first_words.load()) {
    requested_at_ns = now_ns();
    say(first_words.load());
    return;
  }
  if (sig == none && first_words.load() && now_ns() - requested_at_ns.load() < kSameRequestNs) return;
  // The kernel repeats SIGXCPU each CPU second past the soft limit: a repeat is not a second
  // request to end at once (the stop's checkpoint may take longer than a second).
  if (sig == SIGXCPU && none != 0 && first_words.load()) return;
  say(at_once_words.load());
  support::end_children_now();  // (a compiler left running would finish for nothing, its output never used)
  remove_armed_folder();
  support::remove_temporaries_being_written([](const char* path) {  // (a checkpoint half-written: gigabytes)
    (void)!::write(STDERR_FILENO, "bertc: removed the half-written ", 32);
    (void)!::write(STDERR_FILENO, path, std::strlen(path));
    (void)!::write(STDERR_FILENO, "\n", 1);
  });
  ::_exit(128 + sig);
}

// SIGQUIT ends at once as its default does (a core where core files are on), with the programs
// bertc runs ended first.
void on_quit(int sig) {
  support::end_children_now();
  remove_armed_folder();
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// The stop signals other than SIGPIPE (a thread's own, from its write) are blocked from the start
// (take_stop_signals: in the main thread before any other exists, so in every thread) and taken by
// one thread that waits for them: a library may swap in a handler of its own for a while (NVRTC
// does while it compiles, and ends the process with exit code 4 on SIGTERM), and a blocked signal
// never reaches any handler. Without a StopOnSignal alive, a signal does what its default does.
sigset_t waited_signals;
std::atomic<bool> active{false};  // a StopOnSignal lives

[[noreturn]] void wait_for_signals() {
  for (;;) {
    const int sig = sigwaitinfo(&waited_signals, nullptr);
    if (sig <= 0) continue;  // (EINTR)
    if (active.load()) {
      on_signal(sig);
      continue;
    }
    // The CPU limit's repeat once the stop it asked for is made (the command is on its way out
    // with 152): its default would dump a core and end what is left of a graceful exit.
    if (sig == SIGXCPU && requested.load() == SIGXCPU) continue;
    support::end_children_now();  // (a compiler left running would finish for nothing)
    ::signal(sig, SIG_DFL);  // (its default: the process ends by the signal)
    sigset_t just;
    sigemptyset(&just);
    sigaddset(&just, sig);
    pthread_sigmask(SIG_UNBLOCK, &just, nullptr);
    ::raise(sig);
  }
}

}  // namespace

void block_stop_signals() {
  static bool blocked = false;  // (before main, or in main's thread: no other thread asks)
  if (blocked) return;
  blocked = true;
  sigemptyset(&waited_signals);
  for (const int sig : kStopSignals) {
    struct sigaction now {};
    sigaction(sig, nullptr, &now);
    // (a signal ignored when bertc starts stays ignored: nohup ignores SIGHUP so that a run
    // outlives its terminal, and a shell ignores SIGINT for a script's background jobs)
    if (sig != SIGPIPE && now.sa_handler != SIG_IGN) sigaddset(&waited_signals, sig);
  }
  sigprocmask(SIG_BLOCK, &waited_signals, nullptr);
}

void take_stop_signals() {
  static std::once_flag once;
  std::call_once(once, [] {
    block_stop_signals();
    std::thread(wait_for_signals).detach();
  });
}

StopOnSignal::StopOnSignal(const char* first, const char* at_once) {
  take_stop_signals();  // (bertc took them at its start; a test's first one takes them here)
  requested = 0;
  first_words = first;
  at_once_words = at_once;
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // (system calls in flight go on: the step finishes)
  // The handlers: for SIGPIPE, and for threads made before take_stop_signals (a test's).
  for (size_t i = 0; i < kStopSignals.size(); ++i) {
    sigaction(kStopSignals[i], nullptr, &previous[i]);
    if (previous[i].sa_handler != SIG_IGN) sigaction(kStopSignals[i], &action, nullptr);
  }
  struct sigaction quit {};
  quit.sa_handler = on_quit;
  sigemptyset(&quit.sa_mask);
  sigaction(SIGQUIT, &quit, &previous_quit);
  active = true;
}

StopOnSignal::~StopOnSignal() {
  active = false;
  for (size_t i = 0; i < kStopSignals.size(); ++i) sigaction(kStopSignals[i], &previous[i], nullptr);
  sigaction(SIGQUIT, &previous_quit, nullptr);
}

int stop_requested() { return requested.load(); }

void remove_on_hard_stop(const std::filesystem::path& lock, const std::filesystem::path& folder) {
  removal_armed = false;
  const std::string l = lock.string(), f = folder.string();
  if (l.size() >= sizeof removal_lock || f.size() >= sizeof removal_folder) return;
  std::memcpy(removal_lock, l.c_str(), l.size() + 1);
  std::memcpy(removal_folder, f.c_str(), f.size() + 1);
  removal_armed = true;
}

void forget_on_hard_stop() { removal_armed = false; }

std::string signal_name(int signal) {
  switch (signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    case SIGXCPU: return "SIGXCPU (the CPU-time limit)";
    case SIGPIPE: return "SIGPIPE (the log's reader went away)";
    default: return "signal " + std::to_string(signal);
  }
}

void request_stop(int signal) { requested = signal; }

}  // namespace bertc::run_folder
