// Numeric bounds of command-line options, said as people write them ("--steps: 0 is not 1 or
// more"), where CLI11's PositiveNumber prints the range of a double (a 309-digit maximum).
#pragma once

#include <cmath>
#include <cstdlib>
#include <string>

#include <CLI/CLI.hpp>

namespace bertc::tools {

// A whole number of at least `least` (and at most `most`, `why` said after the bound), in plain decimal digits: what the option's integer is read
// as, whoever reads it (CLI11 reads "010" as octal, std::stoll "1e3" as 1: neither passes).
inline CLI::Validator at_least(long long least, long long most = 999999999999999999, const std::string& why = "") {
  return CLI::Validator(
      [least, most, why](std::string& text) -> std::string {
        const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos &&
                            (text == "0" || text[0] != '0');
        if (!digits) return "'" + text + "' is not a whole number written in decimal digits (no sign, point or leading 0)";
        if (text.size() > 18) return text + " is too large: give a number below 10^18 (at most 18 digits)";
        if (std::stoll(text) < least) return text + " is not " + std::to_string(least) + " or more";
        if (std::stoll(text) > most) return text + " is more than " + std::to_string(most) + why;
        return "";
      },
      ">= " + std::to_string(least));
}

// A finite real number above `bound` (or, with `or_equal`, not below it).
inline CLI::Validator real_above(double bound, bool or_equal) {
  return CLI::Validator(
      [bound, or_equal](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0' || !std::isfinite(v)) return "'" + text + "' is not a finite number";
        if (or_equal ? !(v >= bound) : !(v > bound))
          return text + " is not " + (or_equal ? "" : "above ") + CLI::detail::to_string(bound) + (or_equal ? " or more" : "");
        return "";
      },
      (or_equal ? ">= " : "> ") + CLI::detail::to_string(bound));
}

inline const CLI::Validator kCount = at_least(1);             // 1, 2, ...
inline const CLI::Validator kCountOrNone = at_least(0);       // 0, 1, ...
inline const CLI::Validator kPositive = real_above(0, false);  // a real above 0
inline const CLI::Validator kNonNegative = real_above(0, true);  // a real of 0 or more

}  // namespace bertc::tools
