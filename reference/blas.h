// Row-major matrix products through OpenBLAS, in float or double.
#pragma once

namespace bertc::reference {

// C[M,N] = op(A) @ op(B) (+ C when accumulate), row-major; lda/ldb follow from the transposes.
void gemm(bool ta, bool tb, int m, int n, int k, const float* a, const float* b, float* c, bool accumulate = false);
void gemm(bool ta, bool tb, int m, int n, int k, const double* a, const double* b, double* c, bool accumulate = false);

}  // namespace bertc::reference
