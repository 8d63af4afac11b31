// Element types of IR values, listed once.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace bertc::ir {

// BERTC_DTYPES(X): X(id, name, bytes, is float, the largest finite magnitude a value may have: a
// float's largest finite number, an integer's largest, i64's 2^53 - 1, to which an IR attribute,
// a double, holds every whole number)
#define BERTC_DTYPES(X) \
  X(F64, "f64", 8, true, 1.7976931348623157e308) \
  X(F32, "f32", 4, true, 3.4028234663852886e38) \
  X(F16, "f16", 2, true, 65504.0) \
  X(BF16, "bf16", 2, true, 3.3895313892515355e38) \
  X(I64, "i64", 8, false, 9007199254740991.0) \
  X(I32, "i32", 4, false, 2147483647.0) \
  X(U8, "u8", 1, false, 255.0) \
  X(Bool, "bool", 1, false, 1.0)

enum class DType : unsigned char {
#define BERTC_DTYPE_ENUM(id, text, bytes, is_float, largest) id,
  BERTC_DTYPES(BERTC_DTYPE_ENUM)
#undef BERTC_DTYPE_ENUM
};

std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);
std::size_t dtype_bytes(DType t);
bool is_float(DType t);
inline bool is_integer(DType t) { return !is_float(t) && t != DType::Bool; }
// The finite values a dtype holds, lowest and highest: a float's largest finite magnitude either
// way (f16's 65504...), an integer's range (i64's within +-(2^53 - 1), what an IR attribute, a
// double, holds exactly; u8's from 0).
struct FiniteRange {
  double lowest, highest;
};
FiniteRange finite_range(DType t);

}  // namespace bertc::ir
