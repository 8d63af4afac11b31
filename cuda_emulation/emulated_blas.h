// The emulated cuBLAS's rules and arithmetic, behind the exports blas_api.cpp gives as
// libcublas.so.13: a handle's stream, workspace, pointer and math modes, and the GEMMs bertc calls
// (cublasGemmEx, cublasGemmStridedBatchedEx) with every argument checked as the cuBLAS
// documentation lists (section "cublasGemmEx": dimensions, transposes, leading dimensions, the
// supported type and compute-type combinations), computed on the CPU as column-major BLAS defines
// them and run as a kernel on the handle's stream of the emulated driver (library_kernels.h).
// Written from NVIDIA's cuBLAS documentation and cublas_api.h, not from bertc's use of them.
#pragma once

#include <cublas_api.h>

#include <cstdint>
#include <string>

#include "cuda_emulation/library_kernels.h"

namespace bertc::cuda_emulation {

// What a cublasHandle_t points to.
struct BlasHandle {
  CUstream stream = nullptr;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
  cublasMath_t math_mode = CUBLAS_DEFAULT_MATH;
  bertcEmulatedLaunchLibraryKernelFn launch = nullptr;  // the driver's (library_kernels.h)
  int compute_capability = 0;                            // the GPU's, 80 for sm_80
};

// One strided batch of column-major products C = alpha op(A) op(B) + beta C (cublasGemmEx is a
// batch of one).
struct GemmCall {
  cublasOperation_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
  int64_t m = 0, n = 0, k = 0;
  const void* alpha = nullptr;
  const void* a = nullptr;
  cudaDataType a_type = CUDA_R_32F;
  int64_t lda = 0, stride_a = 0;
  const void* b = nullptr;
  cudaDataType b_type = CUDA_R_32F;
  int64_t ldb = 0, stride_b = 0;
  const void* beta = nullptr;
  void* c = nullptr;
  cudaDataType c_type = CUDA_R_32F;
  int64_t ldc = 0, stride_c = 0;
  int64_t batch = 1;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cublasGemmAlgo_t algo = CUBLAS_GEMM_DEFAULT;
};

// The status cuBLAS documents for `call` on `handle`; SUCCESS after it is issued on the handle's
// stream (or at once nothing to do). Why a call is refused is also said on stderr, where real
// cuBLAS says nothing, so that a test's failure names its cause.
cublasStatus_t issue_gemm(const BlasHandle& handle, const GemmCall& call);

// The enum's spelling and the documentation's description of a status (nullptr for none).
const char* status_name(cublasStatus_t status);
const char* status_text(cublasStatus_t status);

// The handle's state: SUCCESS, or NOT_INITIALIZED where no emulated driver is loaded (said on
// stderr).
cublasStatus_t open_handle(BlasHandle* handle);

}  // namespace bertc::cuda_emulation
