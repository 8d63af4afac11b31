// The emulated cuBLAS's exports (libcublas.so.13): the handle and GEMM calls under the names
// cublas_v2.h maps them to (cublasCreate -> cublasCreate_v2 ...), each checked as cuBLAS
// documents and run by emulated_blas. Nothing else is exported (blas_exports.map).
#include <cublas_api.h>

#include <memory>
#include <mutex>
#include <set>

#include "cuda_emulation/emulated_blas.h"

using bertc::cuda_emulation::BlasHandle;
using bertc::cuda_emulation::GemmCall;

namespace {

std::mutex handles_lock;
std::set<BlasHandle*>& handles() {
  static auto* live = new std::set<BlasHandle*>;
  return *live;
}

// The handle's state, or nullptr for a handle cublasCreate did not give (or destroyed).
BlasHandle* state(cublasHandle_t handle) {
  std::lock_guard guard(handles_lock);
  auto* h = reinterpret_cast<BlasHandle*>(handle);
  return handles().count(h) ? h : nullptr;
}

}  // namespace

extern "C" {

cublasStatus_t CUBLASWINAPI cublasCreate_v2(cublasHandle_t* handle) {
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  auto h = std::make_unique<BlasHandle>();
  if (const cublasStatus_t s = bertc::cuda_emulation::open_handle(h.get())) return s;
  std::lock_guard guard(handles_lock);
  handles().insert(h.get());
  *handle = reinterpret_cast<cublasHandle_t>(h.release());
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasDestroy_v2(cublasHandle_t handle) {
  BlasHandle* h = state(handle);
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  {
    std::lock_guard guard(handles_lock);
    handles().erase(h);
  }
  delete h;  // (kernels already issued keep what they need: they run after it)
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasGetVersion_v2(cublasHandle_t handle, int* version) {
  if (!state(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!version) return CUBLAS_STATUS_INVALID_VALUE;
  *version = CUBLAS_VERSION;
  return CUBLAS_STATUS_SUCCESS;
}

// The version of the cublas_api.h it was written to: a program that asks learns which cuBLAS's
// rules it follows.
cublasStatus_t CUBLASWINAPI cublasGetProperty(libraryPropertyType type, int* value) {
  if (!value) return CUBLAS_STATUS_INVALID_VALUE;
  switch (type) {
    case MAJOR_VERSION: *value = CUBLAS_VER_MAJOR; return CUBLAS_STATUS_SUCCESS;
    case MINOR_VERSION: *value = CUBLAS_VER_MINOR; return CUBLAS_STATUS_SUCCESS;
    case PATCH_LEVEL: *value = CUBLAS_VER_PATCH; return CUBLAS_STATUS_SUCCESS;
    default: return CUBLAS_STATUS_INVALID_VALUE;
  }
}

const char* CUBLASWINAPI cublasGetStatusName(cublasStatus_t status) {
  const char* name = bertc::cuda_emulation::status_name(status);
  return name ? name : "CUBLAS_STATUS_UNKNOWN";
}

const char* CUBLASWINAPI cublasGetStatusString(cublasStatus_t status) {
  const char* text = bertc::cuda_emulation::status_text(status);
  return text ? text : "unknown status";
}

// (cuBLAS sets the workspace back to its own pool here; the emulation's products use none)
cublasStatus_t CUBLASWINAPI cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  BlasHandle* h = state(handle);
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  h->stream = reinterpret_cast<CUstream>(stream);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* stream) {
  BlasHandle* h = state(handle);
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!stream) return CUBLAS_STATUS_INVALID_VALUE;
  *stream = reinterpret_cast<cudaStream_t>(h->stream);
  return CUBLAS_STATUS_SUCCESS;
}

// The workspace must be 256-byte aligned (the documentation); the emulation's products need none,
// so it is checked and not kept.
cublasStatus_t CUBLASWINAPI cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t bytes) {
  BlasHandle* h = state(handle);
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (reinterpret_cast<uintptr_t>(workspace) % 256 != 0 || (!workspace && bytes > 0))
    return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode) {
  BlasHandle* h = state(handle);
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE) return CUBLAS_STATUS_INVALID_VALUE;
  h->pointer_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t* mode) {
  BlasHandle* h = state(handle);
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = h->pointer_mode;
  return CUBLAS_STATUS_SUCCESS;
}

// A mode of cublasMath_t, alone or with CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION.
cublasStatus_t CUBLASWINAPI cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  BlasHandle* h = state(handle);
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  const int base = mode & ~CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
  if (base != CUBLAS_DEFAULT_MATH && base != CUBLAS_TENSOR_OP_MATH && base != CUBLAS_PEDANTIC_MATH &&
      base != CUBLAS_TF32_TENSOR_OP_MATH)
    return CUBLAS_STATUS_INVALID_VALUE;
  h->math_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  BlasHandle* h = state(handle);
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = h->math_mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                         int n, int k, const void* alpha, const void* A, cudaDataType Atype, int lda,
                                         const void* B, cudaDataType Btype, int ldb, const void* beta, void* C,
                                         cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                                         cublasGemmAlgo_t algo) {
  BlasHandle* h = state(handle);
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  return bertc::cuda_emulation::issue_gemm(*h, GemmCall{transa, transb, m, n, k, alpha, A, Atype, lda, 0, B, Btype, ldb,
                                                        0, beta, C, Ctype, ldc, 0, 1, computeType, algo});
}

cublasStatus_t CUBLASWINAPI cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                                       cublasOperation_t transb, int m, int n, int k, const void* alpha,
                                                       const void* A, cudaDataType Atype, int lda, long long strideA,
                                                       const void* B, cudaDataType Btype, int ldb, long long strideB,
                                                       const void* beta, void* C, cudaDataType Ctype, int ldc,
                                                       long long strideC, int batchCount,
                                                       cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  BlasHandle* h = state(handle);
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  return bertc::cuda_emulation::issue_gemm(*h, GemmCall{transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B,
                                                        Btype, ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount,
                                                        computeType, algo});
}

}  // extern "C"
