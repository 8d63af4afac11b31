// Data movement: reshape, permute, broadcast, slice, pad, concat, gather and its gradient.
#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "reference/kernels.h"
#include "reference/strided.h"

namespace bertc::reference {
namespace {

// Applies f to the storage both tensors use (real or integer).
template <typename T, typename F>
void on_storage(const HostTensor<T>& in, HostTensor<T>& out, F f) {
  if (in.is_real()) f(in.real, out.real);
  else f(in.integer, out.integer);
}

// out[i] = in[offset(i)] for every element of out, in-strides given per out dim.
template <typename T>
void gather_strided(const HostTensor<T>& in, HostTensor<T>& out, const Strides& in_strides, int64_t base = 0) {
  on_storage(in, out, [&](const auto& src, auto& dst) {
    for_each_offset<1>(out.type.shape, {in_strides}, [&](int64_t i, const std::array<int64_t, 1>& o) { dst[i] = src[o[0]]; },
                       {base});
  });
}

// out[offset(i)] = in[i] for every element of in, out-strides given per in dim.
template <typename T>
void scatter_strided(const HostTensor<T>& in, HostTensor<T>& out, const Strides& out_strides, int64_t base) {
  on_storage(in, out, [&](const auto& src, auto& dst) {
    for_each_offset<1>(in.type.shape, {out_strides}, [&](int64_t i, const std::array<int64_t, 1>& o) { dst[o[0]] = src[i]; },
                       {base});
  });
}

// The index value of gather row (b, j) checked against the table's row count.
int64_t row_index(int64_t index, int64_t rows, int64_t at) {
  if (index < 0 || index >= rows)
    throw EvalError(fmt::format("index {} at position {} is outside [0, {})", index, at, rows));
  return index;
}

// Sizes of gather's [b..., N, rest...] table and [b..., idx...] indices.
struct GatherDims {
  int64_t batch = 1, rows = 0, per_batch = 1, row_size = 1;
};
GatherDims gather_dims(const ir::Shape& table, const ir::Shape& indices, int64_t batch_dims) {
  GatherDims d;
  for (int64_t i = 0; i < batch_dims; ++i) d.batch *= table[i];
  d.rows = table[batch_dims];
  for (size_t i = batch_dims + 1; i < table.size(); ++i) d.row_size *= table[i];
  for (size_t i = batch_dims; i < indices.size(); ++i) d.per_batch *= indices[i];
  return d;
}

}  // namespace

template <typename T>
void eval_Reshape(OpEval<T>& e) {
  on_storage(*e.in[0], e.out[0], [](const auto& src, auto& dst) { dst = src; });
}

template <typename T>
void eval_Permute(OpEval<T>& e) {
  const auto& perm = e.template attr<std::vector<int64_t>>("perm");
  const Strides own = contiguous_strides(e.shape(0));
  Strides s;
  for (int64_t p : perm) s.push_back(own[p]);
  gather_strided(*e.in[0], e.out[0], s);
}

template <typename T>
void eval_Broadcast(OpEval<T>& e) {
  gather_strided(*e.in[0], e.out[0], broadcast_strides(e.shape(0), e.out[0].type.shape));
}

template <typename T>
void eval_Slice(OpEval<T>& e) {
  const Strides s = contiguous_strides(e.shape(0));
  const int64_t axis = e.template attr<int64_t>("axis");
  gather_strided(*e.in[0], e.out[0], s, e.template attr<int64_t>("start") * s[axis]);
}

template <typename T>
void eval_Pad(OpEval<T>& e) {
  const Strides s = contiguous_strides(e.out[0].type.shape);
  const int64_t axis = e.template attr<int64_t>("axis");
  scatter_strided(*e.in[0], e.out[0], s, e.template attr<int64_t>("before") * s[axis]);
}

template <typename T>
void eval_Concat(OpEval<T>& e) {
  const Strides s = contiguous_strides(e.out[0].type.shape);
  const int64_t axis = e.template attr<int64_t>("axis");
  int64_t at = 0;
  for (const HostTensor<T>* part : e.in) {
    scatter_strided(*part, e.out[0], s, at * s[axis]);
    at += part->type.shape[axis];
  }
}

template <typename T>
void eval_Gather(OpEval<T>& e) {
  const GatherDims d = gather_dims(e.shape(0), e.shape(1), e.template attr<int64_t>("batch_dims"));
  const std::vector<int64_t>& idx = e.integer(1);
  on_storage(*e.in[0], e.out[0], [&](const auto& table, auto& out) {
    for (int64_t b = 0; b < d.batch; ++b)
      for (int64_t j = 0; j < d.per_batch; ++j) {
        const int64_t at = b * d.per_batch + j;
        const int64_t row = row_index(idx[at], d.rows, at);
        std::copy_n(table.begin() + (b * d.rows + row) * d.row_size, d.row_size, out.begin() + at * d.row_size);
      }
  });
}

// Stable: positions with equal (batch, index) keep their order. Indices out of range are the
// gather's concern (row_index refuses them there); here they sort as the nearest row.
template <typename T>
void eval_ArgSort(OpEval<T>& e) {
  const std::vector<int64_t>& idx = e.integer(0);
  const ir::Shape& shape = e.shape(0);
  const int64_t rows = e.template attr<int64_t>("rows");
  int64_t per_batch = 1;
  for (size_t i = static_cast<size_t>(e.template attr<int64_t>("batch_dims")); i < shape.size(); ++i) per_batch *= shape[i];
  auto key = [&](int64_t at) { return at / per_batch * rows + std::clamp<int64_t>(idx[at], 0, rows - 1); };
  std::vector<int64_t>& order = e.out[0].integer;
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return key(a) < key(b); });
}

template <typename T>
void eval_ScatterAdd(OpEval<T>& e) {
  const GatherDims d = gather_dims(e.out[0].type.shape, e.shape(1), e.template attr<int64_t>("batch_dims"));
  const int64_t padding = e.template attr<int64_t>("padding_idx");
  const std::vector<T>& updates = e.real(0);
  const std::vector<int64_t>& idx = e.integer(1);
  std::vector<double> acc(e.out[0].real.size(), 0.0);  // many rows may land on one: sum in double
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t j = 0; j < d.per_batch; ++j) {
      const int64_t at = b * d.per_batch + j;
      const int64_t row = row_index(idx[at], d.rows, at);
      if (row == padding) continue;
      const int64_t dst = (b * d.rows + row) * d.row_size, src = at * d.row_size;
      for (int64_t c = 0; c < d.row_size; ++c) acc[dst + c] += updates[src + c];
    }
  std::copy(acc.begin(), acc.end(), e.out[0].real.begin());
}

BERTC_INSTANTIATE_EVAL(eval_Reshape)
BERTC_INSTANTIATE_EVAL(eval_Permute)
BERTC_INSTANTIATE_EVAL(eval_Broadcast)
BERTC_INSTANTIATE_EVAL(eval_Slice)
BERTC_INSTANTIATE_EVAL(eval_Pad)
BERTC_INSTANTIATE_EVAL(eval_Concat)
BERTC_INSTANTIATE_EVAL(eval_Gather)
BERTC_INSTANTIATE_EVAL(eval_ArgSort)
BERTC_INSTANTIATE_EVAL(eval_ScatterAdd)

}  // namespace bertc::reference
