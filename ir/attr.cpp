// Text form of attribute values (the parser reads back exactly what this writes).
#include "ir/attr.h"

#include <fmt/format.h>

namespace bertc::ir {

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string_view attr_kind_name(AttrKind kind) {
  switch (kind) {
    case AttrKind::Bool: return "bool";
    case AttrKind::Int: return "int";
    case AttrKind::Float: return "float";
    case AttrKind::Ints: return "int list";
    case AttrKind::String: return "string";
  }
  return "?";
}

std::string format_attr(const AttrValue& value) {
  struct Visitor {
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(int64_t i) const { return fmt::format("{}", i); }
    // fmt's default is the shortest text that reads back to the same double.
    std::string operator()(double d) const { return fmt::format("{}", d); }
    std::string operator()(const std::vector<int64_t>& v) const {
      return fmt::format("[{}]", fmt::join(v, ","));
    }
    std::string operator()(const std::string& s) const { return quote(s); }
  };
  return std::visit(Visitor{}, value);
}

}  // namespace bertc::ir
