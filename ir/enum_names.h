// Printed names of the project's closed sets: each enum has one table (value, name), from which
// the name of a value, the value of a name and the list of choices (help texts, errors) all come.
//
//   enum class Precision { Fp32, Bf16 };
//   BERTC_ENUM_NAMES(Precision, {Precision::Fp32, "fp32"}, {Precision::Bf16, "bf16"})
//
// The macro goes right after the enum, in its namespace (the functions below find the table by
// argument-dependent lookup); it also prints the enum on streams.
#pragma once

#include <array>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#define BERTC_ENUM_NAMES(E, ...)                                                                \
  constexpr auto enum_names_table(E) { return std::to_array<std::pair<E, std::string_view>>({__VA_ARGS__}); } \
  inline std::ostream& operator<<(std::ostream& out, E value) { return out << ::bertc::ir::enum_name(value); }

namespace bertc::ir {

// The printed name of `value`; "?" for a value the table lacks (a cast from an integer).
template <typename E>
constexpr std::string_view enum_name(E value) {
  for (const auto& [v, name] : enum_names_table(E{}))
    if (v == value) return name;
  return "?";
}

// The value printed as `name`; nullopt when there is none.
template <typename E>
constexpr std::optional<E> enum_from_name(std::string_view name) {
  for (const auto& [v, n] : enum_names_table(E{}))
    if (n == name) return v;
  return std::nullopt;
}

// Every name, in table order.
template <typename E>
std::vector<std::string> enum_choices() {
  std::vector<std::string> out;
  for (const auto& entry : enum_names_table(E{})) out.emplace_back(entry.second);
  return out;
}

// "a, b or c": the choices as a message lists them.
template <typename E>
std::string enum_choice_list() {
  const std::vector<std::string> names = enum_choices<E>();
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return out;
}

// The value printed as `name`; throws std::invalid_argument listing the choices when none is.
template <typename E>
E enum_named(std::string_view name) {
  if (const auto value = enum_from_name<E>(name)) return *value;
  throw std::invalid_argument("'" + std::string(name) + "' is not one of " + enum_choice_list<E>());
}

}  // namespace bertc::ir
