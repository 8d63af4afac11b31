// A graceful stop on SIGINT or SIGTERM (Ctrl-C; what Slurm and Kubernetes send before they kill):
// the first one asks the trainer to finish its optimizer step, write a checkpoint and end; a
// second one ends the process at once (atomic writes leave only complete files either way).
#pragma once

namespace bertc::train {

// While one lives, SIGINT and SIGTERM are caught; the previous handlers come back when it goes.
class StopOnSignal {
 public:
  StopOnSignal();
  ~StopOnSignal();
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;
};

// The signal that asked for a stop (SIGINT, SIGTERM), or 0.
int stop_requested();

// For tests: as if `signal` had arrived.
void request_stop(int signal);

}  // namespace bertc::train
