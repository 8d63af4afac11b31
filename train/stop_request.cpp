// SIGINT/SIGTERM into a stop request (see stop_request.h).
#include "train/stop_request.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>

namespace bertc::train {
namespace {

std::atomic<int> requested{0};
struct sigaction previous_int, previous_term;

void on_signal(int sig) {
  int none = 0;
  if (requested.compare_exchange_strong(none, sig)) {
    constexpr char said[] = "\nbertc: stopping after this optimizer step (a checkpoint follows); signal again to end "
                            "at once\n";
    (void)!::write(STDERR_FILENO, said, sizeof said - 1);
    return;
  }
  constexpr char said[] = "\nbertc: ended at once by a second signal; resume from the newest checkpoint\n";
  (void)!::write(STDERR_FILENO, said, sizeof said - 1);
  ::_exit(128 + sig);
}

}  // namespace

StopOnSignal::StopOnSignal() {
  requested = 0;
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // (system calls in flight go on: the step finishes)
  sigaction(SIGINT, &action, &previous_int);
  sigaction(SIGTERM, &action, &previous_term);
}

StopOnSignal::~StopOnSignal() {
  sigaction(SIGINT, &previous_int, nullptr);
  sigaction(SIGTERM, &previous_term, nullptr);
}

int stop_requested() { return requested.load(); }

void request_stop(int signal) { requested = signal; }

}  // namespace bertc::train
