// Numeric bounds of command-line options, said as people write them ("--steps: 0 is not 1 or
// more"), where CLI11's PositiveNumber prints the range of a double (a 309-digit maximum).
#pragma once

#include <cstdlib>
#include <string>

#include <CLI/CLI.hpp>

namespace bertc::tools {

// A number of at least `least` (1: a count; 0: a count that may be none).
inline CLI::Validator at_least(long long least) {
  return CLI::Validator(
      [least](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0') return "'" + text + "' is not a number";
        if (v < static_cast<double>(least)) return text + " is not " + std::to_string(least) + " or more";
        return "";
      },
      ">= " + std::to_string(least));
}

// A number above `bound` (a real: a tolerance, a size).
inline CLI::Validator above(double bound) {
  return CLI::Validator(
      [bound](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0') return "'" + text + "' is not a number";
        if (!(v > bound)) return text + " is not above " + CLI::detail::to_string(bound);
        return "";
      },
      "> " + CLI::detail::to_string(bound));
}

inline const CLI::Validator kCount = at_least(1);          // 1, 2, ...
inline const CLI::Validator kCountOrNone = at_least(0);    // 0, 1, ... (also a real that may be 0)
inline const CLI::Validator kPositive = above(0.0);        // a real above 0

}  // namespace bertc::tools
