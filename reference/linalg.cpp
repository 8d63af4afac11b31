// Matrix products through BLAS (OpenBLAS), looping over broadcast batch dimensions.
#include <cblas.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

#include "reference/blas.h"
#include "reference/kernels.h"
#include "reference/strided.h"

namespace bertc::reference {
namespace {

// OpenBLAS retries an allocation of its buffers that fails, for ever: under an address-space limit
// (ulimit -v) too tight for them a matrix product never returned. Under such a limit it runs on one
// thread (one_blas_thread_under_address_limit), and before its first product the room for its
// buffer is tried: too little is refused, with the limit named.
constexpr size_t kBlasRoom = size_t{136} << 20;  // (its buffer: 128 MiB in the Debian build, and a margin)
std::atomic<bool> blas_ready{false};

void ensure_blas_room() {
  if (blas_ready.load(std::memory_order_relaxed)) return;
  static const rlim_t limit = [] {
    rlimit r{};
    return ::getrlimit(RLIMIT_AS, &r) == 0 ? r.rlim_cur : RLIM_INFINITY;
  }();
  if (limit == RLIM_INFINITY) {
    blas_ready = true;
    return;
  }
  void* room = ::mmap(nullptr, kBlasRoom, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (room == MAP_FAILED)
    throw std::runtime_error(fmt::format(
        "matrix products need {} MiB more address space for OpenBLAS's buffers than the address-space limit (ulimit "
        "-v {} KiB) leaves, and OpenBLAS would wait for it for ever: raise the limit by {} KiB or more, or remove it "
        "(ulimit -v unlimited) and bound memory otherwise (ulimit -m, a cgroup's MemoryMax)",
        kBlasRoom >> 20, limit / 1024, kBlasRoom / 1024));
  ::munmap(room, kBlasRoom);
}

}  // namespace

void one_blas_thread_under_address_limit(char** argv) {
  rlimit r{};
  if (::getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY || std::getenv("OPENBLAS_NUM_THREADS")) return;
  ::setenv("OPENBLAS_NUM_THREADS", "1", 1);
  ::execv("/proc/self/exe", argv);  // (returns only when it fails: then the run goes on as it is)
}

void gemm(bool ta, bool tb, int m, int n, int k, const float* a, const float* b, float* c, bool accumulate) {
  ensure_blas_room();
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a,
              ta ? m : k, b, tb ? k : n, accumulate ? 1.0f : 0.0f, c, n);
  blas_ready = true;  // (its buffers are made: later products reuse them)
}
void gemm(bool ta, bool tb, int m, int n, int k, const double* a, const double* b, double* c, bool accumulate) {
  ensure_blas_room();
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0, a,
              ta ? m : k, b, tb ? k : n, accumulate ? 1.0 : 0.0, c, n);
  blas_ready = true;
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
