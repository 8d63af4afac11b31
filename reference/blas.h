// Row-major matrix products through OpenBLAS, in float or double.
#pragma once

namespace bertc::reference {

// Call first in main, before any thread is made. Under an address-space limit (ulimit -v) the
// process is executed again with OPENBLAS_NUM_THREADS=1 unless that is set: OpenBLAS starts its
// thread pool as the library loads, and a pool thread whose buffer finds no room retries for ever
// (a run spun at 100% CPU, and its exit waited for that thread). With one thread there is no pool;
// the one buffer's room is tried before the first product (gemm refuses, naming the limit).
void one_blas_thread_under_address_limit(char** argv);

// C[M,N] = op(A) @ op(B) (+ C when accumulate), row-major; lda/ldb follow from the transposes.
void gemm(bool ta, bool tb, int m, int n, int k, const float* a, const float* b, float* c, bool accumulate = false);
void gemm(bool ta, bool tb, int m, int n, int k, const double* a, const double* b, double* c, bool accumulate = false);

}  // namespace bertc::reference
