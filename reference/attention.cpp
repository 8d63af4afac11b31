// Fused attention and its gradient, computed per (batch, head) with the same sequence of
// operations as the unfused ops (matmul, scale, bias, softmax, dropout, matmul), so the two agree.
// attention/attention_grad keep q, k, v and out as [B,h,S,d]; attention_qkv/attention_qkv_grad
// read them from a packed [B,S,3,h,d] projection and keep out as [B,S,h,d]: the same math over
// other strides.
#include <cmath>

#include "ir/attention_layout.h"
#include "ir/philox.h"
#include "reference/blas.h"
#include "reference/kernels.h"
#include "reference/strided.h"

namespace bertc::reference {
namespace {

using ir::AttentionLayout;
using ir::AttentionRows;

// The rows of one (b, h), contiguous [rows][d].
template <typename T>
std::vector<T> gather(const std::vector<T>& data, const AttentionRows& r, int64_t rows, int64_t d, int64_t b, int64_t h) {
  std::vector<T> x(rows * d);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < d; ++c) x[i * d + c] = data[r.at(b, h, i) + c];
  return x;
}

template <typename T>
void scatter(std::vector<T>& data, const AttentionRows& r, int64_t rows, int64_t d, int64_t b, int64_t h,
             const std::vector<T>& x) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < d; ++c) data[r.at(b, h, i) + c] = x[i * d + c];
}

// The scores of one (b, h): q k^T * scale + bias, bias read through its broadcast strides; with
// example ids, -inf between a query and a key of two examples (left out: probability exactly 0,
// as block_bias's -10000 makes it beside the query's own example, whose keys include itself).
template <typename T>
std::vector<T> scores(const OpEval<T>& e, const std::vector<T>& q, const std::vector<T>& k, size_t bias_at,
                      const AttentionLayout& n, int64_t b, int64_t h) {
  std::vector<T> s(n.sq * n.sk);
  gemm(false, true, int(n.sq), int(n.sk), int(n.d), q.data(), k.data(), s.data());
  const T scale = static_cast<T>(e.template attr<double>("scale"));
  const Strides bs = broadcast_strides(e.shape(bias_at), {n.batch, n.heads, n.sq, n.sk});
  const T* bias = e.real(bias_at).data() + b * bs[0] + h * bs[1];
  const int64_t* ids = n.example_ids ? e.integer(*n.example_ids).data() + b * n.sq : nullptr;
  for (int64_t i = 0; i < n.sq; ++i)
    for (int64_t j = 0; j < n.sk; ++j)
      s[i * n.sk + j] = ids && ids[i] != ids[j] ? T(-INFINITY) : s[i * n.sk + j] * scale + bias[i * bs[2] + j * bs[3]];
  return s;
}

// The dropout multiplier of every probability of one (b, h): 0 or 1/(1-p), as dropout draws it.
template <typename T>
std::vector<T> dropout_factors(const OpEval<T>& e, const AttentionLayout& n, int64_t b, int64_t h) {
  const double p = e.template attr<double>("p");
  std::vector<T> f(n.sq * n.sk, T(1));
  if (p == 0) return f;
  const auto seed = static_cast<uint64_t>(e.integer(*n.seed)[0]);
  const auto offset = static_cast<uint64_t>(e.template attr<int64_t>("offset"));
  const uint32_t threshold = ir::dropout_threshold(p);
  const T scale = T(1) / (T(1) - static_cast<T>(p));
  const uint64_t base = static_cast<uint64_t>((b * n.heads + h) * n.sq * n.sk);
  for (size_t i = 0; i < f.size(); ++i) f[i] = ir::dropout_keep(seed, offset, base + i, threshold) ? scale : T(0);
  return f;
}

// out and logsumexp (results 0 and 1).
template <typename T>
void forward(OpEval<T>& e, const AttentionLayout& n) {
  for (int64_t b = 0; b < n.batch; ++b)
    for (int64_t h = 0; h < n.heads; ++h) {
      std::vector<T> p = scores(e, gather(e.real(n.q), n.q_rows, n.sq, n.d, b, h), gather(e.real(n.k), n.k_rows, n.sk, n.d, b, h),
                                n.bias, n, b, h);
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
      const std::vector<T> v = gather(e.real(n.v), n.v_rows, n.sk, n.d, b, h);
      std::vector<T> out(n.sq * n.d);
      gemm(false, false, int(n.sq), int(n.d), int(n.sk), p.data(), v.data(), out.data());
      scatter(e.out[0].real, n.out_rows, n.sq, n.d, b, h, out);
    }
}

// dv = P'^T dout; dP = (dout v^T) * mask; dS = P (dP - rowsum(dP P)); dq = dS*scale k; dk = (dS*scale)^T q.
template <typename T>
void backward(OpEval<T>& e, const AttentionLayout& n) {
  const T scale = static_cast<T>(e.template attr<double>("scale"));
  for (int64_t b = 0; b < n.batch; ++b)
    for (int64_t h = 0; h < n.heads; ++h) {
      const int64_t bh = b * n.heads + h;
      const std::vector<T> dout = gather(e.real(n.dout), n.out_rows, n.sq, n.d, b, h);
      const std::vector<T> q = gather(e.real(n.q), n.q_rows, n.sq, n.d, b, h), k = gather(e.real(n.k), n.k_rows, n.sk, n.d, b, h);
      const std::vector<T> v = gather(e.real(n.v), n.v_rows, n.sk, n.d, b, h);
      std::vector<T> p = scores(e, q, k, n.bias, n, b, h);
      const std::vector<T> f = dropout_factors(e, n, b, h);
      const T* lse = e.real(n.lse).data() + bh * n.sq;
      std::vector<T> dropped(p.size());
      for (int64_t i = 0; i < n.sq; ++i)
        for (int64_t j = 0; j < n.sk; ++j) {
          T& x = p[i * n.sk + j];
          x = static_cast<T>(std::exp(double(x) - double(lse[i])));
          dropped[i * n.sk + j] = x * f[i * n.sk + j];
        }
      std::vector<T> dq(n.sq * n.d), dk(n.sk * n.d), dv(n.sk * n.d);
      gemm(true, false, int(n.sk), int(n.d), int(n.sq), dropped.data(), dout.data(), dv.data());
      std::vector<T> ds(p.size());
      gemm(false, true, int(n.sq), int(n.sk), int(n.d), dout.data(), v.data(), ds.data());
      for (int64_t i = 0; i < n.sq; ++i) {
        double dot = 0;
        for (int64_t j = 0; j < n.sk; ++j) {
          ds[i * n.sk + j] *= f[i * n.sk + j];
          dot += double(ds[i * n.sk + j]) * p[i * n.sk + j];
        }
        for (int64_t j = 0; j < n.sk; ++j)
          ds[i * n.sk + j] = static_cast<T>(p[i * n.sk + j] * (ds[i * n.sk + j] - dot)) * scale;
      }
      gemm(false, false, int(n.sq), int(n.d), int(n.sk), ds.data(), k.data(), dq.data());
      gemm(true, false, int(n.sk), int(n.d), int(n.sq), ds.data(), q.data(), dk.data());
      scatter(e.out[n.dq].real, n.q_rows, n.sq, n.d, b, h, dq);
      scatter(e.out[n.dk].real, n.k_rows, n.sk, n.d, b, h, dk);
      scatter(e.out[n.dv].real, n.v_rows, n.sk, n.d, b, h, dv);
    }
}

}  // namespace

template <typename T>
void eval_Attention(OpEval<T>& e) {
  forward(e, ir::attention_layout(e.graph, e.op));
}

template <typename T>
void eval_AttentionGrad(OpEval<T>& e) {
  backward(e, ir::attention_layout(e.graph, e.op));
}

// The packed ops differ only in their layout, which attention_layout reads from the op.
template <typename T>
void eval_AttentionQkv(OpEval<T>& e) {
  eval_Attention(e);
}

template <typename T>
void eval_AttentionQkvGrad(OpEval<T>& e) {
  eval_AttentionGrad(e);
}

BERTC_INSTANTIATE_EVAL(eval_Attention)
BERTC_INSTANTIATE_EVAL(eval_AttentionGrad)
BERTC_INSTANTIATE_EVAL(eval_AttentionQkv)
BERTC_INSTANTIATE_EVAL(eval_AttentionQkvGrad)

}  // namespace bertc::reference
