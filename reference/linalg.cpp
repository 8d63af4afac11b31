// Matrix products through BLAS (OpenBLAS), looping over broadcast batch dimensions.
#include <cblas.h>

#include "reference/blas.h"
#include "reference/kernels.h"
#include "reference/strided.h"

namespace bertc::reference {
void gemm(bool ta, bool tb, int m, int n, int k, const float* a, const float* b, float* c, bool accumulate) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a,
              ta ? m : k, b, tb ? k : n, accumulate ? 1.0f : 0.0f, c, n);
}
void gemm(bool ta, bool tb, int m, int n, int k, const double* a, const double* b, double* c, bool accumulate) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0, a,
              ta ? m : k, b, tb ? k : n, accumulate ? 1.0 : 0.0, c, n);
}

namespace {

ir::Shape batch_of(const ir::Shape& s) { return ir::Shape(s.begin(), s.end() - 2); }

}  // namespace

template <typename T>
void eval_Matmul(OpEval<T>& e) {
  const bool ta = e.template attr<bool>("transpose_a"), tb = e.template attr<bool>("transpose_b");
  const ir::Shape &sa = e.shape(0), &sb = e.shape(1), &so = e.out[0].type.shape;
  const int64_t m = so[so.size() - 2], n = so.back();
  const int64_t k = sa[sa.size() - (ta ? 2 : 1)];
  const int64_t a_size = sa[sa.size() - 2] * sa.back(), b_size = sb[sb.size() - 2] * sb.back(), c_size = m * n;
  const ir::Shape batch = batch_of(so);
  const T* a = e.real(0).data();
  const T* b = e.real(1).data();
  T* c = e.out[0].real.data();
  for_each_offset<2>(batch, {broadcast_strides(batch_of(sa), batch), broadcast_strides(batch_of(sb), batch)},
                     [&](int64_t i, const std::array<int64_t, 2>& o) {
                       gemm(ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), a + o[0] * a_size,
                            b + o[1] * b_size, c + i * c_size);
                     });
}

BERTC_INSTANTIATE_EVAL(eval_Matmul)

}  // namespace bertc::reference
