// Fused attention and its gradient, computed per (batch, head) with the same sequence of
// operations as the unfused ops (matmul, scale, bias, softmax, dropout, matmul), so the two agree.
#include <cmath>

#include "ir/philox.h"
#include "reference/blas.h"
#include "reference/kernels.h"
#include "reference/strided.h"

namespace bertc::reference {
namespace {

struct Dims {
  int64_t batch, heads, sq, sk, d;
};

template <typename T>
Dims dims_of(const OpEval<T>& e, size_t q_at) {
  const ir::Shape& q = e.shape(q_at);
  return {q[0], q[1], q[2], e.shape(q_at + 1)[2], q[3]};
}

// The scores of one (b, h): q k^T * scale + bias, bias read through its broadcast strides.
template <typename T>
std::vector<T> scores(const OpEval<T>& e, size_t q_at, const Dims& n, int64_t b, int64_t h) {
  const T* q = e.real(q_at).data() + (b * n.heads + h) * n.sq * n.d;
  const T* k = e.real(q_at + 1).data() + (b * n.heads + h) * n.sk * n.d;
  std::vector<T> s(n.sq * n.sk);
  gemm(false, true, int(n.sq), int(n.sk), int(n.d), q, k, s.data());
  const T scale = static_cast<T>(e.template attr<double>("scale"));
  const Strides bs = broadcast_strides(e.shape(q_at + 3), {n.batch, n.heads, n.sq, n.sk});
  const T* bias = e.real(q_at + 3).data() + b * bs[0] + h * bs[1];
  for (int64_t i = 0; i < n.sq; ++i)
    for (int64_t j = 0; j < n.sk; ++j) s[i * n.sk + j] = s[i * n.sk + j] * scale + bias[i * bs[2] + j * bs[3]];
  return s;
}

// The dropout multiplier of every probability of one (b, h): 0 or 1/(1-p), as dropout draws it.
template <typename T>
std::vector<T> dropout_factors(const OpEval<T>& e, const Dims& n, int64_t b, int64_t h) {
  const double p = e.template attr<double>("p");
  std::vector<T> f(n.sq * n.sk, T(1));
  if (p == 0) return f;
  const auto seed = static_cast<uint64_t>(e.integer(e.in.size() - 1)[0]);
  const auto offset = static_cast<uint64_t>(e.template attr<int64_t>("offset"));
  const uint32_t threshold = ir::dropout_threshold(p);
  const T scale = T(1) / (T(1) - static_cast<T>(p));
  const uint64_t base = static_cast<uint64_t>((b * n.heads + h) * n.sq * n.sk);
  for (size_t i = 0; i < f.size(); ++i) f[i] = ir::dropout_keep(seed, offset, base + i, threshold) ? scale : T(0);
  return f;
}

}  // namespace

template <typename T>
void eval_Attention(OpEval<T>& e) {
  const Dims n = dims_of(e, 0);
  for (int64_t b = 0; b < n.batch; ++b)
    for (int64_t h = 0; h < n.heads; ++h) {
      std::vector<T> p = scores(e, 0, n, b, h);
      const std::vector<T> f = dropout_factors(e, n, b, h);
      T* lse = e.out[1].real.data() + (b * n.heads + h) * n.sq;
      for (int64_t i = 0; i < n.sq; ++i) {
        T* row = p.data() + i * n.sk;
        double m = -INFINITY, sum = 0;
        for (int64_t j = 0; j < n.sk; ++j) m = std::max<double>(m, row[j]);
        for (int64_t j = 0; j < n.sk; ++j) sum += std::exp(row[j] - m);
        const double l = m + std::log(sum);
        lse[i] = static_cast<T>(l);
        for (int64_t j = 0; j < n.sk; ++j) row[j] = static_cast<T>(std::exp(row[j] - l)) * f[i * n.sk + j];
      }
      const T* v = e.real(2).data() + (b * n.heads + h) * n.sk * n.d;
      gemm(false, false, int(n.sq), int(n.d), int(n.sk), p.data(), v, e.out[0].real.data() + (b * n.heads + h) * n.sq * n.d);
    }
}

// dv = P'^T dout; dP = (dout v^T) * mask; dS = P (dP - rowsum(dP P)); dq = dS*scale k; dk = (dS*scale)^T q.
template <typename T>
void eval_AttentionGrad(OpEval<T>& e) {
  const Dims n = dims_of(e, 1);
  const T scale = static_cast<T>(e.template attr<double>("scale"));
  for (int64_t b = 0; b < n.batch; ++b)
    for (int64_t h = 0; h < n.heads; ++h) {
      const int64_t bh = b * n.heads + h;
      std::vector<T> p = scores(e, 1, n, b, h);
      const std::vector<T> f = dropout_factors(e, n, b, h);
      const T* lse = e.real(6).data() + bh * n.sq;
      std::vector<T> dropped(p.size());
      for (int64_t i = 0; i < n.sq; ++i)
        for (int64_t j = 0; j < n.sk; ++j) {
          T& x = p[i * n.sk + j];
          x = static_cast<T>(std::exp(double(x) - double(lse[i])));
          dropped[i * n.sk + j] = x * f[i * n.sk + j];
        }
      const T* dout = e.real(0).data() + bh * n.sq * n.d;
      const T* q = e.real(1).data() + bh * n.sq * n.d;
      const T* k = e.real(2).data() + bh * n.sk * n.d;
      const T* v = e.real(3).data() + bh * n.sk * n.d;
      gemm(true, false, int(n.sk), int(n.d), int(n.sq), dropped.data(), dout, e.out[2].real.data() + bh * n.sk * n.d);
      std::vector<T> ds(p.size());
      gemm(false, true, int(n.sq), int(n.sk), int(n.d), dout, v, ds.data());
      for (int64_t i = 0; i < n.sq; ++i) {
        double dot = 0;
        for (int64_t j = 0; j < n.sk; ++j) {
          ds[i * n.sk + j] *= f[i * n.sk + j];
          dot += double(ds[i * n.sk + j]) * p[i * n.sk + j];
        }
        for (int64_t j = 0; j < n.sk; ++j)
          ds[i * n.sk + j] = static_cast<T>(p[i * n.sk + j] * (ds[i * n.sk + j] - dot)) * scale;
      }
      gemm(false, false, int(n.sq), int(n.d), int(n.sk), ds.data(), k, e.out[0].real.data() + bh * n.sq * n.d);
      gemm(true, false, int(n.sk), int(n.d), int(n.sq), ds.data(), q, e.out[1].real.data() + bh * n.sk * n.d);
    }
}

BERTC_INSTANTIATE_EVAL(eval_Attention)
BERTC_INSTANTIATE_EVAL(eval_AttentionGrad)

}  // namespace bertc::reference
