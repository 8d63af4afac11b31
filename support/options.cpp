// Checking, printing and converting option values (see options.h).
#include "support/options.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace bertc::support {

std::optional<std::string> check_problem(const OptionValue& value, Check check) {
  if (const auto* i = std::get_if<int64_t>(&value)) {
    if (check == Check::Positive && *i <= 0) return fmt::format("must be positive, found {}", *i);
    if (check == Check::NonNegative && *i < 0) return fmt::format("must be >= 0, found {}", *i);
  }
  if (check == Check::Probability || check == Check::PositiveFloat || check == Check::NonNegativeFloat ||
      check == Check::Seconds) {
    const double d = std::holds_alternative<int64_t>(value) ? static_cast<double>(std::get<int64_t>(value))
                                                            : std::get<double>(value);
    // A float option is a rate, a moment or an epsilon: infinity would train nothing, silently.
    if (std::isinf(d)) return fmt::format("must be finite, found {}", d);
    if (check == Check::Probability && !(d >= 0 && d < 1))
      return fmt::format("must be a probability in [0, 1), found {}", d);
    if (check == Check::PositiveFloat && !(d > 0)) return fmt::format("must be positive, found {}", d);
    if (check == Check::NonNegativeFloat && !(d >= 0)) return fmt::format("must be >= 0, found {}", d);
    // (An f32 constant past the largest f32 is infinite, and one below its least step is 0: a
    // max_grad_norm of 1e-50 would turn clipping off, an epsilon of 1e-300 would be the 0 refused.)
    // (Compared before the cast: a double past f32's range has no f32 to be cast to.)
    if (check == Check::PositiveFloat || check == Check::NonNegativeFloat) {
      if (std::abs(d) > std::numeric_limits<float>::max())
        return fmt::format("must be at most {} (the largest f32, which bertc computes in), found {}",
                           std::numeric_limits<float>::max(), d);
      if (static_cast<float>(d) == 0 && d != 0)
        return fmt::format("is 0 in f32 (which bertc computes in; its least positive value is {}), found {}{}",
                           std::numeric_limits<float>::denorm_min(), d,
                           check == Check::NonNegativeFloat ? ": write 0 if 0 is meant" : "");
    }
    if (check == Check::Seconds && !(d >= 1))
      return fmt::format("must be at least 1 (seconds: a shorter wait stops ranks that are only busy), found {}", d);
  }
  return std::nullopt;
}

std::optional<std::string> choice_problem(const std::string& value, const std::vector<std::string>& choices) {
  if (choices.empty() || std::find(choices.begin(), choices.end(), value) != choices.end()) return std::nullopt;
  return fmt::format("must be one of {}, found \"{}\"", fmt::join(choices, ", "), value);
}

std::optional<std::string_view> pass_key_in(std::string_view pass_keys, std::string_view pass) {
  while (!pass_keys.empty()) {
    const size_t space = pass_keys.find(' ');
    const std::string_view entry = pass_keys.substr(0, space);
    pass_keys = space == std::string_view::npos ? std::string_view{} : pass_keys.substr(space + 1);
    const size_t colon = entry.find(':');
    if (colon != std::string_view::npos && entry.substr(0, colon) == pass) return entry.substr(colon + 1);
  }
  return std::nullopt;
}

std::string flag_of(std::string_view key) {
  std::string flag = "--" + std::string(key);
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

std::string value_text(const OptionValue& value) {
  if (const auto* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (const auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&value)) return fmt::format("{}", *d);
  return std::get<std::string>(value);
}

std::optional<OptionValue> value_from_text(ValueKind kind, std::string_view text) {
  switch (kind) {
    case ValueKind::Bool:  // the spellings command lines commonly take
      if (text == "true" || text == "1" || text == "on" || text == "yes") return OptionValue(true);
      if (text == "false" || text == "0" || text == "off" || text == "no") return OptionValue(false);
      return std::nullopt;
    case ValueKind::Int: {
      int64_t v = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
      return OptionValue(v);
    }
    case ValueKind::Float: {
      double v = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
      return OptionValue(v);
    }
    case ValueKind::String: return OptionValue(std::string(text));
  }
  return std::nullopt;
}

std::string why_no_value(ValueKind kind, std::string_view text) {
  if (kind == ValueKind::Int || kind == ValueKind::Float) {
    double v = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (end == text.data() + text.size() && !text.empty() &&
        (error == std::errc::result_out_of_range || (kind == ValueKind::Int && error == std::errc() &&
                                                     text.find_first_of(".eE") == std::string_view::npos)))
      // (the bound on the side it is past: a byte budget's range is not said as starting at -9.2e18)
      return kind == ValueKind::Int ? (text.starts_with('-')
                                           ? fmt::format("'{}' is below the smallest integer, {}", text,
                                                         std::numeric_limits<int64_t>::min())
                                           : fmt::format("'{}' is past the largest integer, {}", text,
                                                         std::numeric_limits<int64_t>::max()))
                                    : fmt::format("'{}' is out of range of a double", text);
  }
  return fmt::format("must be {}, found '{}'", kind_description(kind), text);
}

std::string_view kind_description(ValueKind kind) {
  switch (kind) {
    case ValueKind::Bool: return "true or false";  // (1/0, on/off, yes/no on command lines)
    case ValueKind::Int: return "an integer";
    case ValueKind::Float: return "a number";
    case ValueKind::String: return "a string";
  }
  return "?";
}

}  // namespace bertc::support
