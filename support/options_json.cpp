// Option values as JSON (see options_json.h).
#include "support/options_json.h"

#include <cstdint>

namespace bertc::support {

nlohmann::json value_json(const OptionValue& value) {
  return std::visit([](const auto& v) { return nlohmann::json(v); }, value);
}

std::optional<OptionValue> value_from_json(ValueKind kind, const nlohmann::json& j) {
  switch (kind) {
    case ValueKind::Bool:
      if (j.is_boolean()) return OptionValue(j.get<bool>());
      break;
    case ValueKind::Int:
      if (j.is_number_integer() && (!j.is_number_unsigned() || j.get<uint64_t>() <= INT64_MAX))
        return OptionValue(j.get<int64_t>());
      break;
    case ValueKind::Float:
      if (j.is_number()) return OptionValue(j.get<double>());
      break;
    case ValueKind::String:
      if (j.is_string()) return OptionValue(j.get<std::string>());
      break;
  }
  return std::nullopt;
}

}  // namespace bertc::support
