// A graceful stop on the signals users and schedulers send before they kill: SIGINT (Ctrl-C),
// SIGTERM (Slurm, Kubernetes, systemd), SIGHUP (a closed terminal or ssh session), SIGUSR1 and
// SIGUSR2 (Slurm's --signal before a time limit), and SIGPIPE (the log piped to a reader that went
// away: `| head`, a tee that died), which stops quietly and never counts as a second signal. The first one asks the work to stop where it
// can (the trainer: after its optimizer step, with a checkpoint); a second one ends the process at
// once (atomic writes leave only complete files either way), the programs it runs (a compiler)
// ended with it. SIGQUIT (Ctrl-\) ends at once as its default does, ending those programs first.
#pragma once

#include <filesystem>
#include <string>

namespace bertc::run_folder {

// While one lives, those signals are caught (but those ignored when it was made, as nohup ignores
// SIGHUP, stay ignored; take_stop_signals says how they reach it) and the first is said on stderr
// with `first`
// (a string literal: written from the signal handler); the previous handlers come back when it goes.
class StopOnSignal {
 public:
  // `at_once`: said when a second signal ends the process (a string literal too). `first` null:
  // the first signal ends it so, for work that cannot stop midway and has nothing to lose (bertc
  // compile: its outputs and cache entries are written whole or not at all).
  explicit StopOnSignal(
      const char* first = "stopping after this optimizer step, with a checkpoint (before the first step: with nothing "
                          "to save, at once while text is read, else when the compile under way ends); signal again "
                          "to end at once",
      const char* at_once = "ended at once by a second signal: run the same command again (with --resume if the run "
                            "folder holds a checkpoint)");
  ~StopOnSignal();
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;
};

// Blocks the stop signals but SIGPIPE (those not ignored) in the calling thread, and so in every
// thread it starts, and starts the one thread that takes them: called first thing in main, before
// any other thread exists, so that no library's handler ever sees them (NVRTC sets its own while
// it compiles). A signal then does what a StopOnSignal alive says, else what its default does.
// Children started with support::run_child hear every signal.
void take_stop_signals();
// Its first half alone, for a program's .preinit_array (tools/driver_main.cpp): there, before any
// library's initializer runs, the threads a library starts in its own (OpenBLAS's) block them too.
void block_stop_signals();

// The signal that asked for a stop, or 0.
int stop_requested();

// A run folder this run made, holding only `lock` so far: removed (the lock file, then the folder,
// if empty) by a hard stop (a second signal, SIGQUIT) until forget_on_hard_stop(), so that no
// folder holding only a lock is left behind. One at a time; paths past PATH_MAX are not kept.
void remove_on_hard_stop(const std::filesystem::path& lock, const std::filesystem::path& folder);
void forget_on_hard_stop();

// "SIGINT", "SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGPIPE (...)", else "signal N".
std::string signal_name(int signal);

// For tests: as if `signal` had arrived.
void request_stop(int signal);

}  // namespace bertc::run_folder
