// Static tensor types: an element type and a shape, with the shape arithmetic ops share.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "ir/dtype.h"

namespace bertc::ir {

using Shape = std::vector<int64_t>;

// Largest element count a tensor may have; keeps every byte size within int64.
inline constexpr int64_t kMaxElements = int64_t{1} << 52;

// a x b and a + b of counts (FLOPs, bytes) that each fit an int64, or ir::Error saying that
// `what` passes 2^63 - 1 (a product of two tensors' sizes, or a sum over many, can: 2^52 x 2^52).
int64_t checked_product(int64_t a, int64_t b, std::string_view what);
int64_t checked_sum(int64_t a, int64_t b, std::string_view what);

struct TensorType {
  DType dtype = DType::F32;
  Shape shape;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  // Element count; throws ir::Error for a negative dimension or an absurd size.
  int64_t numel() const;
  int64_t bytes() const { return numel() * static_cast<int64_t>(dtype_bytes(dtype)); }
  bool operator==(const TensorType&) const = default;
};

std::string shape_string(const Shape& shape);       // "[8,128]"
std::string to_string(const TensorType& type);      // "f32[8,128]"
int64_t checked_numel(const Shape& shape);          // throws ir::Error when invalid

// NumPy broadcasting (trailing dimensions aligned); nullopt when incompatible.
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);
// True when `from` broadcasts to exactly `to`.
bool broadcasts_to(const Shape& from, const Shape& to);

}  // namespace bertc::ir

template <>
struct fmt::formatter<bertc::ir::TensorType> : fmt::formatter<std::string> {
  auto format(const bertc::ir::TensorType& t, fmt::format_context& ctx) const {
    return fmt::formatter<std::string>::format(bertc::ir::to_string(t), ctx);
  }
};
