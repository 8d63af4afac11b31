// A command run as one of several data-parallel ranks (bertc train, bertc finetune): rank 0
// speaks for all, and an error on any rank is said on its own stderr and ends every rank.
#pragma once

#include <exception>
#include <functional>
#include <iostream>
#include <streambuf>
#include <string>

#include "distributed/communicator.h"

namespace bertc::driver {

// While it lives, std::cerr says nothing (a data-parallel rank other than 0: rank 0 reports for
// all); errors are printed after it is gone.
class QuietStderr {
 public:
  explicit QuietStderr(bool quiet) : saved_(quiet ? std::cerr.rdbuf(&null_) : nullptr) {}
  ~QuietStderr() {
    if (saved_) std::cerr.rdbuf(saved_);
  }
  QuietStderr(const QuietStderr&) = delete;
  QuietStderr& operator=(const QuietStderr&) = delete;

 private:
  struct Null : std::streambuf {
    int overflow(int c) override { return c; }
  } null_;
  std::streambuf* saved_;
};

// Runs `body` as a rank of `world`. With one rank it is body() (its errors go up to main's
// handler). With several, an error is said on this rank's stderr as "bertc: rank R of N: error:
// WHAT" followed by `advice(e)` (its fix where main's handler would add one: less memory), and
// every rank is ended (world.abort): a rank left waiting for the one that failed would wait until
// its timeout.
int run_as_rank(distributed::Communicator& world, const std::function<int()>& body,
                const std::function<std::string(const std::exception&)>& advice);

}  // namespace bertc::driver
