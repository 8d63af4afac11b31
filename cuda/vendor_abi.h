// The values of NVIDIA's headers that bertc passes to the driver and cuBLAS it dlopens (built
// without those headers): cuda.h, library_types.h, cublas_api.h. CUDA 12 and 13 agree on each;
// tests/unit/vendor_abi_test.cpp compares every one with the headers where a toolkit is found.
#pragma once

#include <cstddef>

namespace bertc::cuda::abi {

// cuda.h
constexpr int kCudaSuccess = 0;              // CUDA_SUCCESS
constexpr int kCudaErrorOutOfMemory = 2;     // CUDA_ERROR_OUT_OF_MEMORY
constexpr int kCudaErrorNoBinaryForGpu = 209;  // CUDA_ERROR_NO_BINARY_FOR_GPU
constexpr unsigned kStreamNonBlocking = 1;   // CU_STREAM_NON_BLOCKING: stream capture needs a non-legacy stream
constexpr unsigned kEventDisableTiming = 2;  // CU_EVENT_DISABLE_TIMING
// CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: while our stream captures, only this thread's own
// potentially unsafe CUDA calls (an allocation, a synchronizing copy) are refused. Global mode
// would refuse them in every thread of the process too (NCCL's proxy thread, a library's), which
// can fail that thread's work and our capture with it. Nothing bertc captures needs other threads
// kept out: every call the step's graph holds is made on the capturing thread.
constexpr int kCaptureModeThreadLocal = 1;
constexpr int kAttrMultiprocessorCount = 16;      // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
constexpr int kAttrComputeCapabilityMajor = 75;   // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrComputeCapabilityMinor = 76;   // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
constexpr int kJitInfoLogBuffer = 3;              // CU_JIT_INFO_LOG_BUFFER
constexpr int kJitInfoLogBufferSizeBytes = 4;     // CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES
constexpr int kJitErrorLogBuffer = 5;             // CU_JIT_ERROR_LOG_BUFFER
constexpr int kJitErrorLogBufferSizeBytes = 6;    // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES

// library_types.h
constexpr int kCudaR32F = 0, kCudaR16F = 2, kCudaR16BF = 14;  // CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF
constexpr int kMajorVersion = 0, kMinorVersion = 1;            // MAJOR_VERSION, MINOR_VERSION

// cublas_api.h
constexpr int kCublasOpN = 0, kCublasOpT = 1;                  // CUBLAS_OP_N, CUBLAS_OP_T
constexpr int kCublasCompute32F = 68;                          // CUBLAS_COMPUTE_32F
constexpr int kCublasCompute32FFastTf32 = 77;                  // CUBLAS_COMPUTE_32F_FAST_TF32
constexpr int kCublasGemmDefault = -1;                         // CUBLAS_GEMM_DEFAULT

}  // namespace bertc::cuda::abi
