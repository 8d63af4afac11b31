// Options as JSON (the .bertx header, the compile report): every option of a scope, from its
// declaration (options.h).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/options.h"

namespace bertc::support {

nlohmann::json value_json(const OptionValue& value);
// The JSON value as an OptionValue of `kind`; nullopt when it is of another type.
std::optional<OptionValue> value_from_json(ValueKind kind, const nlohmann::json& j);

// Every Program option of `specs` as a JSON object {key: value}.
template <typename S>
nlohmann::json options_json(const std::vector<OptionSpec<S>>& specs, const S& s, Scope scope = Scope::Program) {
  nlohmann::json j = nlohmann::json::object();
  for (const OptionSpec<S>& spec : specs)
    if (spec.scope == scope) j[std::string(spec.key)] = value_json(spec.get(s));
  return j;
}

// The options options_json wrote: every option of `scope` from `j`, the rest at their defaults.
// Throws std::runtime_error naming the key for a missing option, a value of the wrong type or one
// out of range.
template <typename S>
S options_from_json(const std::vector<OptionSpec<S>>& specs, const nlohmann::json& j, Scope scope = Scope::Program) {
  if (!j.is_object()) throw std::runtime_error("options must be a JSON object, found " + j.dump());
  S s{};
  for (const OptionSpec<S>& spec : specs) {
    if (spec.scope != scope) continue;
    if (!j.contains(spec.key)) throw std::runtime_error("option " + std::string(spec.key) + " is missing");
    const auto value = value_from_json(spec.kind, j.at(std::string(spec.key)));
    if (!value)
      throw std::runtime_error("option " + std::string(spec.key) + " must be " + std::string(kind_description(spec.kind)) +
                               ", found " + j.at(std::string(spec.key)).dump());
    if (auto problem = spec.set(s, *value)) throw std::runtime_error("option " + std::string(spec.key) + " " + *problem);
  }
  return s;
}

}  // namespace bertc::support
