// Names, sizes and classes of element types, derived from the one BERTC_DTYPES list.
#include "ir/dtype.h"

namespace bertc::ir {
namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  std::size_t bytes;
  bool is_float;
  double largest;
};
constexpr DTypeInfo kDTypes[] = {
#define BERTC_DTYPE_INFO(id, text, bytes, is_float, largest) {DType::id, text, bytes, is_float, largest},
    BERTC_DTYPES(BERTC_DTYPE_INFO)
#undef BERTC_DTYPE_INFO
};
const DTypeInfo& info(DType t) { return kDTypes[static_cast<int>(t)]; }
}  // namespace

std::string_view dtype_name(DType t) { return info(t).name; }
std::size_t dtype_bytes(DType t) { return info(t).bytes; }
bool is_float(DType t) { return info(t).is_float; }
FiniteRange finite_range(DType t) {
  const double largest = info(t).largest;
  if (t == DType::U8 || t == DType::Bool) return {0, largest};
  return {t == DType::I32 ? -largest - 1 : -largest, largest};
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& d : kDTypes)
    if (d.name == name) return d.type;
  return std::nullopt;
}

}  // namespace bertc::ir
