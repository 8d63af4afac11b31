// The emulated cuBLAS's checks and products (see emulated_blas.h). Statuses and their meanings are
// cublas_api.h's and the cuBLAS documentation's; where the documentation leaves a choice open (a
// combination of types it does not support: listed under both INVALID_VALUE and NOT_SUPPORTED),
// the choice is said beside it.
#include "cuda_emulation/emulated_blas.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "ptx/semantics.h"

namespace bertc::cuda_emulation {
namespace {

size_t element_bytes(cudaDataType t) {
  switch (t) {
    case CUDA_R_32F: return 4;
    case CUDA_R_16F:
    case CUDA_R_16BF: return 2;
    default: return 0;
  }
}

// Whether the documentation's table of cublasGemmEx lists (A/B type, C type) for `compute`. Of its
// rows, those of real floats with a float scale are emulated; the others (16F compute with a half
// scale, integers, doubles, complex) are refused as not emulated, said on stderr.
bool supported(cublasComputeType_t compute, cudaDataType ab, cudaDataType c) {
  switch (compute) {
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
      return (ab == CUDA_R_16BF && (c == CUDA_R_16BF || c == CUDA_R_32F)) ||
             (ab == CUDA_R_16F && (c == CUDA_R_16F || c == CUDA_R_32F)) || (ab == CUDA_R_32F && c == CUDA_R_32F);
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32: return ab == CUDA_R_32F && c == CUDA_R_32F;
    default: return false;
  }
}

bool valid_operation(cublasOperation_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }

// CUBLAS_GEMM_DEFAULT, ALGO0..23 and the (deprecated, still accepted) tensor-op ones.
bool valid_algorithm(cublasGemmAlgo_t algo) {
  return (algo >= CUBLAS_GEMM_DEFAULT && algo <= CUBLAS_GEMM_ALGO23) ||
         (algo >= CUBLAS_GEMM_DEFAULT_TENSOR_OP && algo <= CUBLAS_GEMM_ALGO15_TENSOR_OP);
}

float load(const void* base, cudaDataType t, int64_t i) {
  switch (t) {
    case CUDA_R_16F: return ptx::f16_to_f32(static_cast<const uint16_t*>(base)[i]);
    case CUDA_R_16BF: return ptx::bf16_to_f32(static_cast<const uint16_t*>(base)[i]);
    default: return static_cast<const float*>(base)[i];
  }
}

void store(void* base, cudaDataType t, int64_t i, float v) {
  switch (t) {
    case CUDA_R_16F: static_cast<uint16_t*>(base)[i] = ptx::f32_to_f16(v); break;
    case CUDA_R_16BF: static_cast<uint16_t*>(base)[i] = ptx::f32_to_bf16(v); break;
    default: static_cast<float*>(base)[i] = v;
  }
}

// TF32 of `x` as the PTX ISA's cvt.rna.tf32.f32 makes it: 10 mantissa bits, to nearest with ties
// away from zero (which cuBLAS's TF32 tensor-op kernels are taken to use: its documentation does not
// say).
float to_tf32(float x) {
  if (!std::isfinite(x)) return x;
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  bits = (bits + 0x1000u) & ~0x1fffu;
  std::memcpy(&x, &bits, 4);
  return x;
}

// How the product rounds its inputs before multiplying (the compute type's "fast" modes use
// tensor cores of lower precision: on an Ampere or later GPU for TF32).
enum class InputRounding { None, Tf32, Half, BFloat };

InputRounding input_rounding(const BlasHandle& h, const GemmCall& g) {
  if (g.a_type != CUDA_R_32F) return InputRounding::None;
  const bool tf32_math = (h.math_mode & 0xf) == CUBLAS_TF32_TENSOR_OP_MATH && g.compute == CUBLAS_COMPUTE_32F;
  if ((g.compute == CUBLAS_COMPUTE_32F_FAST_TF32 || tf32_math) && h.compute_capability >= 80) return InputRounding::Tf32;
  if (g.compute == CUBLAS_COMPUTE_32F_FAST_16F) return InputRounding::Half;
  if (g.compute == CUBLAS_COMPUTE_32F_FAST_16BF) return InputRounding::BFloat;
  return InputRounding::None;
}

float rounded(float x, InputRounding r) {
  switch (r) {
    case InputRounding::Tf32: return to_tf32(x);
    case InputRounding::Half: return ptx::f16_to_f32(ptx::f32_to_f16(x));
    case InputRounding::BFloat: return ptx::bf16_to_f32(ptx::f32_to_bf16(x));
    default: return x;
  }
}

// A product as its kernel holds it: the call, its scalars where they were read at the call (host
// pointer mode), and the rounding of its inputs.
struct GemmKernel {
  GemmCall call;
  bool device_scalars = false;
  float alpha = 1, beta = 0;
  InputRounding rounding = InputRounding::None;
};

// op(X)[row, col] of a column-major X with leading dimension ld.
int64_t element(cublasOperation_t op, int64_t row, int64_t col, int64_t ld) {
  return op == CUBLAS_OP_N ? row + col * ld : col + row * ld;
}

// C = alpha op(A) op(B) + beta C, each batch matrix, sums of float products in the order of k.
int run_gemm(void* data, char* /*why*/, size_t /*why_bytes*/) {
  const GemmKernel& kernel = *static_cast<const GemmKernel*>(data);
  const GemmCall& g = kernel.call;
  float alpha = kernel.alpha, beta = kernel.beta;
  if (kernel.device_scalars) {  // (device pointer mode: read when the kernel runs)
    alpha = *static_cast<const float*>(g.alpha);
    beta = *static_cast<const float*>(g.beta);
  }
  for (int64_t batch = 0; batch < g.batch; ++batch) {
    const int64_t a0 = batch * g.stride_a, b0 = batch * g.stride_b, c0 = batch * g.stride_c;
    for (int64_t col = 0; col < g.n; ++col)
      for (int64_t row = 0; row < g.m; ++row) {
        float sum = 0;
        for (int64_t p = 0; p < g.k; ++p) {
          const float x = rounded(load(g.a, g.a_type, a0 + element(g.transa, row, p, g.lda)), kernel.rounding);
          const float y = rounded(load(g.b, g.b_type, b0 + element(g.transb, p, col, g.ldb)), kernel.rounding);
          sum = std::fma(x, y, sum);
        }
        const int64_t at = c0 + row + col * g.ldc;
        // (beta 0: C is not read, so it need not hold numbers: the documentation's rule)
        const float value = beta == 0 ? alpha * sum : alpha * sum + beta * load(g.c, g.c_type, at);
        store(g.c, g.c_type, at, value);
      }
  }
  return 0;
}

// The column-major matrix of `rows` x `cols` at `base` + batch * `stride` elements, as accesses.
void add_matrix(std::vector<bertcEmulatedAccess>* accesses, const void* base, cudaDataType t, int64_t rows,
                int64_t cols, int64_t ld, int64_t stride, int64_t batch, bool writes) {
  const uint64_t e = element_bytes(t);
  for (int64_t b = 0; b < batch; ++b)
    accesses->push_back({reinterpret_cast<uint64_t>(base) + static_cast<uint64_t>(b * stride) * e,
                         static_cast<uint64_t>(rows) * e, static_cast<uint64_t>(ld) * e, static_cast<uint64_t>(cols),
                         writes ? 1 : 0});
}

cublasStatus_t refused(cublasStatus_t status, const std::string& why) {
  std::fprintf(stderr, "bertc emulated cuBLAS: %s: %s\n", status_name(status), why.c_str());
  return status;
}

// What the documentation's list of CUBLAS_STATUS_INVALID_VALUE causes finds in `g`, or "".
std::string invalid_value(const GemmCall& g) {
  if (g.m < 0 || g.n < 0 || g.k < 0) return fmt::format("m {}, n {} or k {} is negative", g.m, g.n, g.k);
  if (g.batch < 0) return fmt::format("batchCount {} is negative", g.batch);
  if (!valid_operation(g.transa) || !valid_operation(g.transb))
    return fmt::format("transa {} or transb {} is not CUBLAS_OP_N, _T or _C", static_cast<int>(g.transa),
                       static_cast<int>(g.transb));
  if (const int64_t need = std::max<int64_t>(1, g.transa == CUBLAS_OP_N ? g.m : g.k); g.lda < need)
    return fmt::format("lda {} is below {} (max(1, {}))", g.lda, need, g.transa == CUBLAS_OP_N ? "m" : "k");
  if (const int64_t need = std::max<int64_t>(1, g.transb == CUBLAS_OP_N ? g.k : g.n); g.ldb < need)
    return fmt::format("ldb {} is below {} (max(1, {}))", g.ldb, need, g.transb == CUBLAS_OP_N ? "k" : "n");
  if (const int64_t need = std::max<int64_t>(1, g.m); g.ldc < need)
    return fmt::format("ldc {} is below {} (max(1, m))", g.ldc, need);
  if (!g.alpha || !g.beta) return "alpha or beta is NULL";
  if (!valid_algorithm(g.algo)) return fmt::format("algo {} is not a cublasGemmAlgo_t", static_cast<int>(g.algo));
  return "";
}

}  // namespace

cublasStatus_t open_handle(BlasHandle* handle) {
  // The driver the program loaded (as cuBLAS uses the libcuda.so.1 of the process), which must be
  // bertc's emulated one: this library's kernels run only there.
  handle->launch = loaded_driver_symbol<bertcEmulatedLaunchLibraryKernelFn>("bertcEmulatedLaunchLibraryKernel");
  using AttributeFn = CUresult (*)(int*, CUdevice_attribute, CUdevice);
  const auto attribute = loaded_driver_symbol<AttributeFn>("cuDeviceGetAttribute");
  if (!handle->launch || !attribute)
    return refused(CUBLAS_STATUS_NOT_INITIALIZED,
                   "bertc's emulated cuBLAS runs only on bertc's emulated CUDA driver, and the process has not loaded "
                   "it (BERTC_CUDA_DRIVER names it)");
  int major = 0, minor = 0;
  if (attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0) != CUDA_SUCCESS ||
      attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0) != CUDA_SUCCESS)
    return refused(CUBLAS_STATUS_NOT_INITIALIZED, "the driver has no GPU (cuInit not called, or none emulated)");
  handle->compute_capability = major * 10 + minor;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t issue_gemm(const BlasHandle& h, const GemmCall& g) {
  if (const std::string why = invalid_value(g); !why.empty()) return refused(CUBLAS_STATUS_INVALID_VALUE, why);
  // (the documentation lists an unsupported combination under both statuses; its NOT_SUPPORTED
  // row names the combination of types, so that)
  if (g.a_type != g.b_type || !supported(g.compute, g.a_type, g.c_type))
    return refused(CUBLAS_STATUS_NOT_SUPPORTED,
                   fmt::format("A type {}, B type {}, C type {} with compute type {}: not a combination the "
                               "emulation runs (cuBLAS's table, rows of float scale)",
                               static_cast<int>(g.a_type), static_cast<int>(g.b_type), static_cast<int>(g.c_type),
                               static_cast<int>(g.compute)));
  auto kernel = std::make_unique<GemmKernel>();
  kernel->call = g;
  kernel->device_scalars = h.pointer_mode == CUBLAS_POINTER_MODE_DEVICE;
  if (!kernel->device_scalars) {  // (host pointer mode: read now; the caller may free them on return)
    kernel->alpha = *static_cast<const float*>(g.alpha);
    kernel->beta = *static_cast<const float*>(g.beta);
  }
  kernel->rounding = input_rounding(h, g);
  if (g.m == 0 || g.n == 0 || g.batch == 0) return CUBLAS_STATUS_SUCCESS;  // (nothing to compute)
  const bool reads_c = kernel->device_scalars || kernel->beta != 0;
  if (!kernel->device_scalars && kernel->beta != 0 && !g.c) return refused(CUBLAS_STATUS_INVALID_VALUE, "C is NULL and beta is not 0");
  std::vector<bertcEmulatedAccess> accesses;
  if (g.k > 0) {
    const bool na = g.transa == CUBLAS_OP_N, nb = g.transb == CUBLAS_OP_N;
    add_matrix(&accesses, g.a, g.a_type, na ? g.m : g.k, na ? g.k : g.m, g.lda, g.stride_a, g.batch, false);
    add_matrix(&accesses, g.b, g.b_type, nb ? g.k : g.n, nb ? g.n : g.k, g.ldb, g.stride_b, g.batch, false);
  }
  if (reads_c) add_matrix(&accesses, g.c, g.c_type, g.m, g.n, g.ldc, g.stride_c, g.batch, false);
  add_matrix(&accesses, g.c, g.c_type, g.m, g.n, g.ldc, g.stride_c, g.batch, true);
  if (kernel->device_scalars)
    for (const void* scalar : {g.alpha, g.beta}) accesses.push_back({reinterpret_cast<uint64_t>(scalar), 4, 0, 1, 0});
  const std::string what =
      fmt::format("cuBLAS gemm {}x{}x{} (batch {})", g.m, g.n, g.k, g.batch);
  const CUresult rc = h.launch(h.stream, what.c_str(), accesses.data(), accesses.size(), run_gemm, kernel.release(),
                               [](void* d) { delete static_cast<GemmKernel*>(d); });
  // (a launch the driver refuses: cuBLAS's status for a kernel that did not launch)
  return rc == CUDA_SUCCESS ? CUBLAS_STATUS_SUCCESS
                            : refused(CUBLAS_STATUS_EXECUTION_FAILED, fmt::format("the driver refused its kernel ({})",
                                                                                  static_cast<int>(rc)));
}

const char* status_name(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return nullptr;
  }
}

const char* status_text(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "the operation completed successfully";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an unsupported value or parameter was passed to the function";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "the function requires a feature absent from the device architecture";
    case CUBLAS_STATUS_MAPPING_ERROR: return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR: return "the functionality requested requires some license";
    default: return nullptr;
  }
}

}  // namespace bertc::cuda_emulation
