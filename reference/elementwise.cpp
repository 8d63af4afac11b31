// Elementwise ops: unary math, broadcasting binary math, activation gradients, casts.
#include <cmath>

#include "reference/kernels.h"
#include "reference/strided.h"

namespace bertc::reference {
namespace {

template <typename T, typename F>
void unary(OpEval<T>& e, F f) {
  const std::vector<T>& x = e.real(0);
  std::vector<T>& y = e.out[0].real;
  for (size_t i = 0; i < x.size(); ++i) y[i] = f(x[i]);
}

// f(a, b) with NumPy broadcasting; a fast loop when the shapes agree.
template <typename T, typename F>
void binary(OpEval<T>& e, F f) {
  const std::vector<T>& a = e.real(0);
  const std::vector<T>& b = e.real(1);
  std::vector<T>& y = e.out[0].real;
  if (e.shape(0) == e.shape(1)) {
    for (size_t i = 0; i < y.size(); ++i) y[i] = f(a[i], b[i]);
    return;
  }
  const ir::Shape& shape = e.out[0].type.shape;
  for_each_offset<2>(shape, {broadcast_strides(e.shape(0), shape), broadcast_strides(e.shape(1), shape)},
                     [&](int64_t i, const std::array<int64_t, 2>& o) { y[i] = f(a[o[0]], b[o[1]]); });
}

constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

}  // namespace

template <typename T> void eval_Neg(OpEval<T>& e) { unary(e, [](T x) { return -x; }); }
template <typename T> void eval_Exp(OpEval<T>& e) { unary(e, [](T x) { return std::exp(x); }); }
template <typename T> void eval_Expm1(OpEval<T>& e) { unary(e, [](T x) { return std::expm1(x); }); }
template <typename T> void eval_Log(OpEval<T>& e) { unary(e, [](T x) { return std::log(x); }); }
template <typename T> void eval_Sqrt(OpEval<T>& e) { unary(e, [](T x) { return std::sqrt(x); }); }
template <typename T> void eval_Rsqrt(OpEval<T>& e) { unary(e, [](T x) { return T(1) / std::sqrt(x); }); }
template <typename T> void eval_Tanh(OpEval<T>& e) { unary(e, [](T x) { return std::tanh(x); }); }
template <typename T> void eval_Relu(OpEval<T>& e) { unary(e, [](T x) { return x > 0 ? x : T(0); }); }
template <typename T>
void eval_LeakyRelu(OpEval<T>& e) {
  const T slope = static_cast<T>(e.template attr<double>("slope"));  // (in T: the kernels multiply by an f32 literal)
  unary(e, [slope](T x) { return x > 0 ? x : slope * x; });
}
template <typename T> void eval_Sigmoid(OpEval<T>& e) { unary(e, [](T x) { return T(1) / (T(1) + std::exp(-x)); }); }
template <typename T>
void eval_Gelu(OpEval<T>& e) {
  unary(e, [](T x) { return static_cast<T>(0.5 * x * (1.0 + std::erf(x * kSqrtHalf))); });
}

template <typename T> void eval_Add(OpEval<T>& e) { binary(e, [](T a, T b) { return a + b; }); }
template <typename T> void eval_Sub(OpEval<T>& e) { binary(e, [](T a, T b) { return a - b; }); }
template <typename T> void eval_Mul(OpEval<T>& e) { binary(e, [](T a, T b) { return a * b; }); }
template <typename T> void eval_Div(OpEval<T>& e) { binary(e, [](T a, T b) { return a / b; }); }
template <typename T> void eval_Minimum(OpEval<T>& e) { binary(e, [](T a, T b) { return std::min(a, b); }); }
template <typename T> void eval_Maximum(OpEval<T>& e) { binary(e, [](T a, T b) { return std::max(a, b); }); }

// d/dx [x * Phi(x)] = Phi(x) + x * phi(x), Phi and phi the normal CDF and density.
template <typename T>
void eval_GeluGrad(OpEval<T>& e) {
  binary(e, [](T dy, T x) {
    const double cdf = 0.5 * (1.0 + std::erf(x * kSqrtHalf));
    const double pdf = kInvSqrt2Pi * std::exp(-0.5 * double(x) * double(x));
    return static_cast<T>(dy * (cdf + x * pdf));
  });
}

template <typename T> void eval_ReluGrad(OpEval<T>& e) { binary(e, [](T dy, T x) { return x > 0 ? dy : T(0); }); }

template <typename T>
void eval_Where(OpEval<T>& e) {
  const ir::Shape& shape = e.out[0].type.shape;
  const HostTensor<T>& cond = *e.in[0];
  const std::vector<T>&a = e.real(1), &b = e.real(2);
  std::vector<T>& y = e.out[0].real;
  for_each_offset<3>(shape, {broadcast_strides(e.shape(0), shape), broadcast_strides(e.shape(1), shape),
                             broadcast_strides(e.shape(2), shape)},
                     [&](int64_t i, const std::array<int64_t, 3>& o) {
                       const bool c = cond.is_real() ? cond.real[o[0]] != T(0) : cond.integer[o[0]] != 0;
                       y[i] = c ? a[o[1]] : b[o[2]];
                     });
}

// bias where the ids agree, else bias - 10000 (rounded to T as the kernel's float arithmetic is
// rounded to the result's type).
template <typename T>
void eval_BlockBias(OpEval<T>& e) {
  const ir::Shape& shape = e.out[0].type.shape;
  const std::vector<T>&bias = e.real(0), &q = e.real(1), &k = e.real(2);
  std::vector<T>& y = e.out[0].real;
  for_each_offset<3>(shape, {broadcast_strides(e.shape(0), shape), broadcast_strides(e.shape(1), shape),
                             broadcast_strides(e.shape(2), shape)},
                     [&](int64_t i, const std::array<int64_t, 3>& o) {
                       y[i] = q[o[1]] == k[o[2]] ? bias[o[0]] : static_cast<T>(bias[o[0]] - T(10000));
                     });
}

template <typename T>
void eval_AllFinite(OpEval<T>& e) {
  bool finite = true;
  for (size_t i = 0; i < e.in.size() && finite; ++i)
    for (T x : e.real(i))
      if (!std::isfinite(x)) {
        finite = false;
        break;
      }
  e.out[0].real[0] = finite ? T(1) : T(0);
}

template <typename T>
void eval_Cast(OpEval<T>& e) {
  const HostTensor<T>& x = *e.in[0];
  HostTensor<T>& y = e.out[0];
  const bool to_bool = y.type.dtype == ir::DType::Bool;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = x.is_real() ? static_cast<double>(x.real[i]) : static_cast<double>(x.integer[i]);
    if (y.is_real()) y.real[i] = static_cast<T>(v);
    else y.integer[i] = to_bool ? (v != 0) : static_cast<int64_t>(std::trunc(v));  // C semantics: toward zero
  }
}

BERTC_INSTANTIATE_EVAL(eval_Neg)
BERTC_INSTANTIATE_EVAL(eval_Exp)
BERTC_INSTANTIATE_EVAL(eval_Expm1)
BERTC_INSTANTIATE_EVAL(eval_Log)
BERTC_INSTANTIATE_EVAL(eval_Sqrt)
BERTC_INSTANTIATE_EVAL(eval_Rsqrt)
BERTC_INSTANTIATE_EVAL(eval_Tanh)
BERTC_INSTANTIATE_EVAL(eval_Relu)
BERTC_INSTANTIATE_EVAL(eval_LeakyRelu)
BERTC_INSTANTIATE_EVAL(eval_Sigmoid)
BERTC_INSTANTIATE_EVAL(eval_Gelu)
BERTC_INSTANTIATE_EVAL(eval_Add)
BERTC_INSTANTIATE_EVAL(eval_Sub)
BERTC_INSTANTIATE_EVAL(eval_Mul)
BERTC_INSTANTIATE_EVAL(eval_Div)
BERTC_INSTANTIATE_EVAL(eval_Minimum)
BERTC_INSTANTIATE_EVAL(eval_BlockBias)
BERTC_INSTANTIATE_EVAL(eval_Maximum)
BERTC_INSTANTIATE_EVAL(eval_GeluGrad)
BERTC_INSTANTIATE_EVAL(eval_ReluGrad)
BERTC_INSTANTIATE_EVAL(eval_Cast)
BERTC_INSTANTIATE_EVAL(eval_Where)
BERTC_INSTANTIATE_EVAL(eval_AllFinite)

}  // namespace bertc::reference
