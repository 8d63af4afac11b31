// Tensors of the CPU reference executor: real values computed in T (float or double) whatever
// their IR float dtype, integer and bool values as int64.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/tensor_type.h"

namespace bertc::ir {

template <typename T>
struct HostTensor {
  ir::TensorType type;
  std::vector<T> real;             // when type.dtype is a float dtype
  std::vector<int64_t> integer;    // otherwise

  bool is_real() const { return ir::is_float(type.dtype); }
  int64_t numel() const { return type.numel(); }

  // Zeros of `type`, in the storage its dtype uses.
  static HostTensor zeros(const ir::TensorType& type) {
    HostTensor t{type, {}, {}};
    if (t.is_real()) t.real.assign(static_cast<size_t>(type.numel()), T(0));
    else t.integer.assign(static_cast<size_t>(type.numel()), 0);
    return t;
  }
  static HostTensor scalar(ir::DType dtype, double value) {
    HostTensor t = zeros({dtype, {}});
    if (t.is_real()) t.real[0] = static_cast<T>(value);
    else t.integer[0] = static_cast<int64_t>(value);
    return t;
  }
};

// Named inputs, params and states a graph reads; update ops write back into it.
template <typename T>
using Environment = std::map<std::string, HostTensor<T>>;

// The same values in another compute precision (float <-> double).
template <typename To, typename From>
HostTensor<To> convert(const HostTensor<From>& t) {
  return {t.type, std::vector<To>(t.real.begin(), t.real.end()), t.integer};
}

}  // namespace bertc::ir
