// Op attributes: a closed set of kinds, values, and the per-op schema entries built from ops.def.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>


namespace bertc::ir {

enum class AttrKind { Bool, Int, Float, Ints, String };

// Alternatives in AttrKind order, so value.index() == static_cast<int>(kind).
using AttrValue = std::variant<bool, int64_t, double, std::vector<int64_t>, std::string>;

struct AttrSpec {
  std::string_view name;
  AttrKind kind;
  std::optional<AttrValue> default_value;  // nullopt: the attribute is required
};

inline AttrKind kind_of(const AttrValue& v) { return static_cast<AttrKind>(v.index()); }
std::string_view attr_kind_name(AttrKind kind);
// The IR text form of a value: true, 3, 1e-12, [0,2,1,3], "text".
std::string format_attr(const AttrValue& value);
// A string in IR text: double quotes, with \" \\ and \n escapes.
std::string quote(const std::string& s);

// Builds a schema default of the right alternative from a plain literal in ops.def.
template <AttrKind K, typename T>
AttrValue attr_default(T literal) {
  if constexpr (K == AttrKind::Bool) return AttrValue(std::in_place_index<0>, bool(literal));
  else if constexpr (K == AttrKind::Int) return AttrValue(std::in_place_index<1>, int64_t(literal));
  else if constexpr (K == AttrKind::Float) return AttrValue(std::in_place_index<2>, double(literal));
  else return AttrValue(std::in_place_index<4>, std::string(literal));
}

}  // namespace bertc::ir
