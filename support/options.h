// Options declared once: a table of OptionSpec per options struct (made from a .def file with
// BERTC_OPTION_SPEC), from which the TOML keys, the command-line flags and their help, the JSON
// of reports and .bertx files (options_json.h) and the pass options of bertc-opt are all derived.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "ir/enum_names.h"

namespace bertc::support {

// A value as a config file or a command line gives it.
using OptionValue = std::variant<bool, int64_t, double, std::string>;
enum class ValueKind { Bool, Int, Float, String };

// What a numeric option accepts beyond its type.
// PositiveFloat, NonNegativeFloat: also a value f32 holds as itself or near (the model, the
// optimizer and the schedule compute in f32): none past f32's largest, none but 0 that f32 makes 0.
// Seconds: a deadline of at least a second (a shorter one stops ranks that are only busy).
enum class Check { Any, Positive, NonNegative, Probability, PositiveFloat, NonNegativeFloat, Seconds };

// Where an option's value matters: Program options shape the compiled program (a .bertx keeps
// them, reports show them); Debug options only change what is printed or dumped.
enum class Scope { Program, Debug };

// How a C++ type is read from and written as an OptionValue. Specialized for bool, int64_t,
// double, std::string and every enum with BERTC_ENUM_NAMES; other types (a GPU arch) specialize it
// where they are defined. from_value returns the problem ("must be one of ...") or nullopt.
template <typename T, typename = void>
struct OptionType;

template <>
struct OptionType<bool> {
  static constexpr ValueKind kind = ValueKind::Bool;
  static std::vector<std::string> choices() { return {}; }
  static OptionValue to_value(bool v) { return v; }
  static std::optional<std::string> from_value(const OptionValue& v, bool& out) {
    out = std::get<bool>(v);
    return std::nullopt;
  }
};

template <>
struct OptionType<int64_t> {
  static constexpr ValueKind kind = ValueKind::Int;
  static std::vector<std::string> choices() { return {}; }
  static OptionValue to_value(int64_t v) { return v; }
  static std::optional<std::string> from_value(const OptionValue& v, int64_t& out) {
    out = std::get<int64_t>(v);
    return std::nullopt;
  }
};

template <>
struct OptionType<double> {
  static constexpr ValueKind kind = ValueKind::Float;
  static std::vector<std::string> choices() { return {}; }
  static OptionValue to_value(double v) { return v; }
  static std::optional<std::string> from_value(const OptionValue& v, double& out) {
    // An integer is accepted where a number is expected (hidden_dropout_prob = 0).
    out = std::holds_alternative<int64_t>(v) ? static_cast<double>(std::get<int64_t>(v)) : std::get<double>(v);
    return std::nullopt;
  }
};

template <>
struct OptionType<std::string> {
  static constexpr ValueKind kind = ValueKind::String;
  static std::vector<std::string> choices() { return {}; }
  static OptionValue to_value(const std::string& v) { return v; }
  static std::optional<std::string> from_value(const OptionValue& v, std::string& out) {
    out = std::get<std::string>(v);
    return std::nullopt;
  }
};

template <typename E>
struct OptionType<E, std::enable_if_t<std::is_enum_v<E>>> {
  static constexpr ValueKind kind = ValueKind::String;
  static std::vector<std::string> choices() { return ir::enum_choices<E>(); }
  static OptionValue to_value(E v) { return std::string(ir::enum_name(v)); }
  static std::optional<std::string> from_value(const OptionValue& v, E& out);
};

// "must be positive, found 0" when `value` fails `check`, else nullopt.
std::optional<std::string> check_problem(const OptionValue& value, Check check);
// "must be one of adamw, lamb, found "sgd"" for a string not among `choices` (any when empty).
std::optional<std::string> choice_problem(const std::string& value, const std::vector<std::string>& choices);

template <typename E>
std::optional<std::string> OptionType<E, std::enable_if_t<std::is_enum_v<E>>>::from_value(const OptionValue& v, E& out) {
  const std::string& text = std::get<std::string>(v);
  if (auto problem = choice_problem(text, choices())) return problem;
  out = *ir::enum_from_name<E>(text);
  return std::nullopt;
}

// One option of struct S.
template <typename S>
struct OptionSpec {
  std::string_view section;  // the config table it is a key of: "compile", "train", "model"
  std::string_view key;      // TOML key, JSON name; the flag is --key with '-' for '_'
  std::string_view doc;
  ValueKind kind;
  std::vector<std::string> choices;  // the names an enum option takes (empty: any value of its kind)
  Scope scope;
  // The passes that read it and its name in each: "precision:mode annotate-costs:precision" ("": none).
  std::string_view pass_keys;
  std::function<OptionValue(const S&)> get;
  // Sets the option; returns what is wrong with `value` ("must be positive, found 0") instead.
  // `value` holds the alternative of `kind` (an Int where a Float is expected is accepted).
  std::function<std::optional<std::string>(S&, const OptionValue&)> set;
  // The default, as text (for help).
  std::string default_text;

  std::string flag() const;  // "--memory-budget"
  // Its name in `pass`'s options, when `pass` reads it.
  std::optional<std::string_view> key_in(std::string_view pass) const;
};

// The name pass `pass` gives an option in `pass_keys` ("precision:mode annotate-costs:precision").
std::optional<std::string_view> pass_key_in(std::string_view pass_keys, std::string_view pass);

// The flag of a key: "--" + key with '_' replaced by '-'.
std::string flag_of(std::string_view key);

// The value as text: true, 12, 0.1, fp32 (what the help and reports show).
std::string value_text(const OptionValue& value);
// `text` read as a value of `kind` (a command-line or pass-option value); nullopt when it is not
// one ("must be an integer", ... is then the caller's to say).
std::optional<OptionValue> value_from_text(ValueKind kind, std::string_view text);
// "an integer", "a number", "true or false", "a string": what a value of `kind` is called.
std::string_view kind_description(ValueKind kind);
// Why `text` is no value of `kind` (value_from_text gave nullopt): "must be an integer, found
// 'x'", or, for digits past 64 bits, "'99999999999999999999' is past the largest integer,
// 9223372036854775807" (below the smallest, for a negative one).
std::string why_no_value(ValueKind kind, std::string_view text);

template <typename S>
std::string OptionSpec<S>::flag() const {
  return flag_of(key);
}

template <typename S>
std::optional<std::string_view> OptionSpec<S>::key_in(std::string_view pass) const {
  return pass_key_in(pass_keys, pass);
}

// Whether a range check applies to values of T: one of the wrong type would never run.
template <typename T>
constexpr bool check_fits(Check check) {
  if (check == Check::Any) return true;
  if (check == Check::Positive || check == Check::NonNegative) return std::is_same_v<T, int64_t>;
  return std::is_same_v<T, double>;
}

// Sets `spec` from `value` after checking the range; returns the problem instead.
template <typename S, typename T>
std::optional<std::string> set_checked(T S::*member, S& s, const OptionValue& value, Check check) {
  if (auto problem = check_problem(value, check)) return problem;
  T parsed{};
  if (auto problem = OptionType<T>::from_value(value, parsed)) return problem;
  s.*member = std::move(parsed);
  return std::nullopt;
}

}  // namespace bertc::support

// Expands a .def line BERTC_OPTION(member, Type, default, Check, ...) into an OptionSpec of S:
//   #define BERTC_OPTION(m, T, d, check, scope, passes, doc) BERTC_OPTION_SPEC(S, "compile", m, T, d, check, scope, passes, doc),
#define BERTC_OPTION_SPEC(S, section, member, Type, default_value, check, scope_, pass_keys_, doc_)               \
  ::bertc::support::OptionSpec<S> {                                                                              \
    section, #member, doc_, ::bertc::support::OptionType<Type>::kind, ::bertc::support::OptionType<Type>::choices(), \
        ::bertc::support::Scope::scope_, pass_keys_,                                                               \
        [](const S& s) { return ::bertc::support::OptionType<Type>::to_value(s.member); },                       \
        [](S& s, const ::bertc::support::OptionValue& v) {                                                        \
          static_assert(::bertc::support::check_fits<Type>(::bertc::support::Check::check),                       \
                        #member ": its check does not apply to its type");                                         \
          return ::bertc::support::set_checked(&S::member, s, v, ::bertc::support::Check::check);                 \
        },                                                                                                         \
        ::bertc::support::value_text(::bertc::support::OptionType<Type>::to_value(default_value))                 \
  }
