// The errors of training and its run folder: what every part of train/ throws, in a header of its
// own so that the parts (progress, run lock, records, data parallelism) need not include the loop.
#pragma once

#include <stdexcept>

namespace bertc::run_folder {

// A problem training met; the message says what to do about it.
class TrainError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The run diverged (a loss or summed gradients not finite): what to change is said by the thrower,
// how to start again (which checkpoint, which folder) by the trainer, which knows the run folder.
class Diverged : public TrainError {
 public:
  using TrainError::TrainError;
};

}  // namespace bertc::run_folder
