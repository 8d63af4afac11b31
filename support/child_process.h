// Programs bertc runs and waits for (the host C++ compiler) that must not outlive it: each runs in
// a process group of its own, so that a terminal's Ctrl-C reaches bertc alone (which decides how
// to stop) and bertc ending at once can end the whole group (the compiler's driver, cc1plus, as, ld).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace bertc::support {

// How a program ended: its exit status, or why it did not (it could not start; a signal ended it).
struct ChildEnd {
  int status = 0;
  std::string failure;  // "" when it exited with `status`; else starts "cannot be run", "was killed", ...
};

// Runs argv (argv[0] looked up on PATH) with stdin from /dev/null and stdout and stderr into `log`,
// in a process group of its own, and waits for it. While it runs, end_children_now() ends it.
ChildEnd run_child(const std::vector<std::string>& argv, const std::filesystem::path& log);

// Ends the process groups of every program run_child is waiting for, with SIGKILL. Async-signal-safe:
// for a signal handler that is about to end bertc at once (and for an exit while one runs). The
// run_child calls whose programs it ends then never return: the caller's exit ends the process.
void end_children_now();

// The processes run_child is waiting for now (the leaders of their groups); for tests.
std::vector<int> running_children();

}  // namespace bertc::support
