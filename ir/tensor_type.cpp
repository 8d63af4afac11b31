// Shape arithmetic: element counts (overflow-checked), printing and broadcasting.
#include "ir/tensor_type.h"

#include <algorithm>

#include "ir/error.h"

namespace bertc::ir {

int64_t checked_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error(fmt::format("shape {} has a negative dimension", shape_string(shape)));
    if (d != 0 && n > kMaxElements / d)
      throw Error(fmt::format("shape {} has more than 2^52 elements", shape_string(shape)));
    n *= d;
  }
  return n;
}

int64_t TensorType::numel() const { return checked_numel(shape); }

std::string shape_string(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ",")); }

std::string to_string(const TensorType& type) {
  return fmt::format("{}{}", dtype_name(type.dtype), shape_string(type.shape));
}

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Walk from the last dimension; a missing leading dimension counts as 1.
    const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[rank - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

int64_t checked_product(int64_t a, int64_t b, std::string_view what) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out))
    throw Error(fmt::format("{} passes 2^63 - 1 ({} x {}): sizes that large have no count bertc can hold", what, a, b));
  return out;
}

int64_t checked_sum(int64_t a, int64_t b, std::string_view what) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out))
    throw Error(fmt::format("{} passes 2^63 - 1 ({} + {}): sizes that large have no count bertc can hold", what, a, b));
  return out;
}

bool broadcasts_to(const Shape& from, const Shape& to) {
  auto b = broadcast_shapes(from, to);
  return b && *b == to;
}

}  // namespace bertc::ir
