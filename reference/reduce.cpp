// Reductions over chosen axes, accumulated in double.
#include <algorithm>
#include <limits>

#include "reference/kernels.h"
#include "reference/strided.h"

namespace bertc::reference {
namespace {

// Strides (over the input's dims) that map an input element to its output element: reduced
// dims get stride 0, the others the output's contiguous strides.
Strides output_strides(const ir::Shape& in, const std::vector<int64_t>& axes) {
  ir::Shape kept;
  for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) kept.push_back(in[d]);
  const Strides kept_strides = contiguous_strides(kept);
  Strides s(in.size(), 0);
  size_t next = 0;
  for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) s[d] = kept_strides[next++];
  return s;
}

template <typename T, typename F>
std::vector<double> reduce(OpEval<T>& e, double init, F combine) {
  const auto& axes = e.template attr<std::vector<int64_t>>("axes");
  std::vector<double> acc(e.out[0].real.size(), init);
  const std::vector<T>& x = e.real(0);
  for_each_offset<1>(e.shape(0), {output_strides(e.shape(0), axes)},
                     [&](int64_t i, const std::array<int64_t, 1>& o) { acc[o[0]] = combine(acc[o[0]], x[i]); });
  return acc;
}

template <typename T>
void store(OpEval<T>& e, const std::vector<double>& acc, double scale = 1.0) {
  for (size_t i = 0; i < acc.size(); ++i) e.out[0].real[i] = static_cast<T>(acc[i] * scale);
}

}  // namespace

template <typename T>
void eval_ReduceSum(OpEval<T>& e) {
  store(e, reduce(e, 0.0, [](double a, T x) { return a + x; }));
}

template <typename T>
void eval_ReduceMax(OpEval<T>& e) {
  store(e, reduce(e, -std::numeric_limits<double>::infinity(), [](double a, T x) { return std::max<double>(a, x); }));
}

template <typename T>
void eval_ReduceMean(OpEval<T>& e) {
  const int64_t in = e.in[0]->numel(), out = e.out[0].numel();
  store(e, reduce(e, 0.0, [](double a, T x) { return a + x; }), out == 0 ? 0.0 : double(out) / double(in));
}

BERTC_INSTANTIATE_EVAL(eval_ReduceSum)
BERTC_INSTANTIATE_EVAL(eval_ReduceMax)
BERTC_INSTANTIATE_EVAL(eval_ReduceMean)

}  // namespace bertc::reference
