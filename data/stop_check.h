// Long data work (reading and tokenizing text, counting examples, writing shards) asks its caller
// whether to stop, so that a signal is honoured in well under a second, not when the work ends.
#pragma once

#include <functional>
#include <string>

#include "data/vocab.h"  // (DataError)

namespace bertc::data {

// The signal asking the work to stop, or 0; empty: never asked.
using StopCheck = std::function<int()>;

// The work stopped on request: what it made so far is dropped, as for any failed run. `where`
// says how far it got ("while tokenizing (40% of the text read)").
class Stopped : public DataError {
 public:
  Stopped(int signal, const std::string& where) : DataError(where), signal_(signal) {}
  int signal() const { return signal_; }

 private:
  int signal_;
};

// The signal `stop` reports, or 0 (for an empty one too).
inline int stop_asked(const StopCheck& stop) { return stop ? stop() : 0; }

}  // namespace bertc::data
