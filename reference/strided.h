// Walking tensors in row-major order with per-operand strides: the one loop behind broadcasting,
// reductions, permutes, slices and pads in the reference executor.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "ir/tensor_type.h"

namespace bertc::reference {

using Strides = std::vector<int64_t>;

inline Strides contiguous_strides(const ir::Shape& shape) {
  Strides s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

// Strides that read a tensor of shape `from` as if broadcast to `to` (0 along broadcast dims).
inline Strides broadcast_strides(const ir::Shape& from, const ir::Shape& to) {
  const Strides own = contiguous_strides(from);
  Strides s(to.size(), 0);
  const size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) s[lead + i] = from[i] == 1 ? 0 : own[i];
  return s;
}

// Calls f(i, offsets) for every element i of `shape` in row-major order, where offsets[k] is the
// element's offset under strides[k] (plus bases[k]).
template <size_t N, typename F>
void for_each_offset(const ir::Shape& shape, const std::array<Strides, N>& strides, F&& f,
                     std::array<int64_t, N> bases = {}) {
  const int64_t total = ir::checked_numel(shape);
  if (total == 0) return;
  const size_t rank = shape.size();
  std::vector<int64_t> index(rank, 0);
  std::array<int64_t, N> offsets = bases;
  for (int64_t i = 0; i < total; ++i) {
    f(i, offsets);
    // Odometer step: bump the last dim, carrying into earlier ones.
    for (size_t d = rank; d-- > 0;) {
      for (size_t k = 0; k < N; ++k) offsets[k] += strides[k][d];
      if (++index[d] < shape[d]) break;
      for (size_t k = 0; k < N; ++k) offsets[k] -= strides[k][d] * shape[d];
      index[d] = 0;
    }
  }
}

}  // namespace bertc::reference
