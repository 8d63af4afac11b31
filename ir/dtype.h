// Element types of IR values, listed once.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace bertc::ir {

// BERTC_DTYPE(Id, text, bytes, is_float)
#define BERTC_DTYPES(X) \
  X(F64, "f64", 8, true) \
  X(F32, "f32", 4, true) \
  X(F16, "f16", 2, true) \
  X(BF16, "bf16", 2, true) \
  X(I64, "i64", 8, false) \
  X(I32, "i32", 4, false) \
  X(U8, "u8", 1, false) \
  X(Bool, "bool", 1, false)

enum class DType : unsigned char {
#define BERTC_DTYPE_ENUM(id, text, bytes, is_float) id,
  BERTC_DTYPES(BERTC_DTYPE_ENUM)
#undef BERTC_DTYPE_ENUM
};

std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);
std::size_t dtype_bytes(DType t);
bool is_float(DType t);
inline bool is_integer(DType t) { return !is_float(t) && t != DType::Bool; }

}  // namespace bertc::ir
