// The values bertc passes to the driver, cuBLAS and NCCL it dlopens (cuda/vendor_abi.h,
// cuda/nccl_library.h: written down by hand, as no header is built against) against NVIDIA's own
// headers: cuda.h, library_types.h and cublas_api.h of the CUDA toolkit, nccl.h of the NCCL wheel.
// A wrong value (a capture mode of global, a JIT option of another kind) would be passed to a
// driver without a word; here it is a failure. Skipped where the headers are not found.
#include <gtest/gtest.h>

#include "cuda/nccl_library.h"
#include "cuda/vendor_abi.h"

#if __has_include(<cuda.h>) && __has_include(<cublas_api.h>) && __has_include(<library_types.h>)
#include <cublas_api.h>
#include <cuda.h>
#include <library_types.h>
#define BERTC_TEST_CUDA_HEADERS 1
#endif
#if __has_include(<nccl.h>)
#include <nccl.h>
#define BERTC_TEST_NCCL_HEADER 1
#endif

namespace bertc {
namespace {

namespace abi = cuda::abi;

TEST(VendorAbi, DriverValuesAreCudaHs) {
#ifndef BERTC_TEST_CUDA_HEADERS
  GTEST_SKIP() << "no CUDA toolkit headers (cuda.h) found at configure time";
#else
  EXPECT_EQ(abi::kCudaSuccess, CUDA_SUCCESS);
  EXPECT_EQ(abi::kCudaErrorOutOfMemory, CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(abi::kCudaErrorNoBinaryForGpu, CUDA_ERROR_NO_BINARY_FOR_GPU);
  EXPECT_EQ(abi::kStreamNonBlocking, static_cast<unsigned>(CU_STREAM_NON_BLOCKING));
  EXPECT_EQ(abi::kEventDisableTiming, static_cast<unsigned>(CU_EVENT_DISABLE_TIMING));
  EXPECT_EQ(abi::kCaptureModeThreadLocal, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  EXPECT_NE(abi::kCaptureModeThreadLocal, CU_STREAM_CAPTURE_MODE_GLOBAL);
  EXPECT_EQ(abi::kAttrMultiprocessorCount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  EXPECT_EQ(abi::kAttrComputeCapabilityMajor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  EXPECT_EQ(abi::kAttrComputeCapabilityMinor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  EXPECT_EQ(abi::kJitInfoLogBuffer, CU_JIT_INFO_LOG_BUFFER);
  EXPECT_EQ(abi::kJitInfoLogBufferSizeBytes, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES);
  EXPECT_EQ(abi::kJitErrorLogBuffer, CU_JIT_ERROR_LOG_BUFFER);
  EXPECT_EQ(abi::kJitErrorLogBufferSizeBytes, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);
#endif
}

TEST(VendorAbi, CublasValuesAreItsHeaders) {
#ifndef BERTC_TEST_CUDA_HEADERS
  GTEST_SKIP() << "no CUDA toolkit headers (cublas_api.h) found at configure time";
#else
  EXPECT_EQ(abi::kCudaR32F, CUDA_R_32F);
  EXPECT_EQ(abi::kCudaR16F, CUDA_R_16F);
  EXPECT_EQ(abi::kCudaR16BF, CUDA_R_16BF);
  EXPECT_EQ(abi::kMajorVersion, MAJOR_VERSION);
  EXPECT_EQ(abi::kMinorVersion, MINOR_VERSION);
  EXPECT_EQ(abi::kCublasOpN, CUBLAS_OP_N);
  EXPECT_EQ(abi::kCublasOpT, CUBLAS_OP_T);
  EXPECT_EQ(abi::kCublasCompute32F, CUBLAS_COMPUTE_32F);
  EXPECT_EQ(abi::kCublasCompute32FFastTf32, CUBLAS_COMPUTE_32F_FAST_TF32);
  EXPECT_EQ(abi::kCublasGemmDefault, CUBLAS_GEMM_DEFAULT);
#endif
}

TEST(VendorAbi, NcclValuesAreNcclHs) {
#ifndef BERTC_TEST_NCCL_HEADER
  GTEST_SKIP() << "no nccl.h (the nvidia-nccl-cu12 wheel scripts/setup.sh installs) found at configure time";
#else
  EXPECT_EQ(cuda::NcclApi::kFloat16, ncclFloat16);
  EXPECT_EQ(cuda::NcclApi::kFloat32, ncclFloat32);
  EXPECT_EQ(cuda::NcclApi::kBfloat16, ncclBfloat16);
  EXPECT_EQ(cuda::NcclApi::kSum, ncclSum);
  EXPECT_EQ(cuda::NcclApi::kAvg, ncclAvg);
  EXPECT_EQ(cuda::NcclApi::kInProgress, ncclInProgress);
  EXPECT_EQ(sizeof(cuda::NcclApi::UniqueId), sizeof(ncclUniqueId));
#endif
}

}  // namespace
}  // namespace bertc
