// run_folder/stop_request: a CPU-time limit's SIGXCPU, which the kernel repeats each CPU second past
// the soft limit, ends nothing once a stop it asked for is made; elsewhere a signal keeps its default.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "run_folder/stop_request.h"

namespace bertc::run_folder {
namespace {

// Runs `body` in a child process; returns its wait status.
template <typename Body>
int in_child(Body body) {
  const pid_t child = fork();
  if (child == 0) {
    const struct rlimit no_core {0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);  // (SIGXCPU's default dumps a core)
    body();
    std::_Exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return status;
}

void wait_for_stop_request(int sig) {
  for (int i = 0; i < 200 && stop_requested() != sig; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (stop_requested() != sig) std::_Exit(3);
}

TEST(StopRequest, ARepeatedCpuLimitAfterTheStopEndsNothing) {
  const int status = in_child([] {
    take_stop_signals();
    {
      const StopOnSignal stop("stopping", "ended at once");
      ::kill(::getpid(), SIGXCPU);
      wait_for_stop_request(SIGXCPU);
    }  // the stop made (a checkpoint written, prepare-data's scratch removed): on to exit 152
    ::kill(::getpid(), SIGXCPU);  // the kernel's repeat a second later
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  });
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << (WIFSIGNALED(status) ? "ended by signal " + std::to_string(WTERMSIG(status)) : "exit status " + std::to_string(status));
}

// timeout(1) (and job schedulers) send a signal to the process and then to its group: the same
// signal twice at once is one request, whose stop (a checkpoint) is made; it ended the run at once.
TEST(StopRequest, TheSameSignalTwiceAtOnceIsOneRequest) {
  const int status = in_child([] {
    take_stop_signals();
    const StopOnSignal stop("stopping", "ended at once");
    ::kill(::getpid(), SIGTERM);
    wait_for_stop_request(SIGTERM);  // (taken: a second one pending would merge into it unseen)
    ::kill(::getpid(), SIGTERM);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  });
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << (WIFSIGNALED(status) ? "ended by signal " + std::to_string(WTERMSIG(status)) : "exit status " + std::to_string(WEXITSTATUS(status)));
}

// ... while the same signal later is the second request, ending at once (128 + the signal).
TEST(StopRequest, TheSameSignalLaterEndsAtOnce) {
  const int status = in_child([] {
    take_stop_signals();
    const StopOnSignal stop("stopping", "ended at once");
    ::kill(::getpid(), SIGTERM);
    wait_for_stop_request(SIGTERM);
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    ::kill(::getpid(), SIGTERM);
    std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  });
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM) << status;
}

// Without a stop asked for, SIGXCPU (and any stop signal) does what its default does.
TEST(StopRequest, WithoutAStopASignalKeepsItsDefault) {
  const int status = in_child([] {
    take_stop_signals();
    ::kill(::getpid(), SIGXCPU);
    std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  });
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU) << status;
}

}  // namespace
}  // namespace bertc::run_folder
