// Errors raised by the IR layer: a message plus, when known, where in the IR text it arose.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace bertc::ir {

// A position in IR text (1-based). line == 0 means "not from text" (built by the DSL).
struct SourceLoc {
  uint32_t line = 0;
  uint32_t column = 0;
  bool known() const { return line != 0; }
};

// Any IR problem a user can act on: bad text, bad shapes, bad attributes.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, SourceLoc loc = {})
      : std::runtime_error(message), loc_(loc) {}
  SourceLoc loc() const { return loc_; }

 private:
  SourceLoc loc_;
};

// "file:line:col: message" when the location is known, else "file: message".
std::string format_diagnostic(const std::string& file, SourceLoc loc, const std::string& message);

}  // namespace bertc::ir
