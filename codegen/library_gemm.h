// Matrix products done by cuBLAS instead of a generated kernel: what the launch record holds,
// its translation to cublasGemmStridedBatchedEx's column-major arguments, and a host run of those
// arguments exactly as cuBLAS defines them, so that the translation is tested without a GPU.
//
// When the compiler picks the library (RenderTarget::matmul, rule in matrix_strategy.h): cuBLAS
// writes a plain product straight into its result (in the result's dtype, FP32 accumulate);
// a product with an epilogue goes to an f32 workspace that the launch's generated epilogue kernel
// reads (bias, GELU, dropout, accumulation, cast — exact erf GELU, which cuBLASLt's tanh-based
// GELU epilogue is not). FP32 inputs run SGEMM (no TF32) unless the precision is tf32
// (CUBLAS_COMPUTE_32F_FAST_TF32); 16-bit inputs use tensor ops on sm_70+.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ir/graph.h"

namespace bertc::codegen {

// Row-major C[batch][m][n] = op(A) op(B) as the IR's matmul reads its operands.
struct LibraryGemm {
  bool transpose_a = false, transpose_b = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int64_t lda = 0, ldb = 0, ldc = 0;                 // row-major leading dimensions, in elements
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // between batch matrices; 0: one matrix for all
  ir::ValueId a = 0, b = 0;                          // the operands' buffers
  bool to_workspace = false;                         // C: the launch's f32 workspace, else value c
  ir::ValueId c = 0;
  ir::DType ab_dtype = ir::DType::F32, c_dtype = ir::DType::F32;
  bool tf32 = false;  // f32 inputs rounded to TF32 on tensor cores (precision tf32)
  size_t workspace_bytes() const { return to_workspace ? static_cast<size_t>(4 * batch * m * n) : 0; }
};

// cublasGemmStridedBatchedEx(handle, op_first, op_second, m, n, k, alpha, first, type_ab, ld_first,
// stride_first, second, type_ab, ld_second, stride_second, beta = 0, c, type_c, ldc, stride_c,
// batch, compute, CUBLAS_GEMM_DEFAULT). cuBLAS is column-major, so the row-major product runs as
// C^T = op(B)^T op(A)^T: `first` is the IR's B and `second` its A.
struct CublasGemmArgs {
  bool transpose_first = false, transpose_second = false;  // CUBLAS_OP_T, else CUBLAS_OP_N
  int64_t m = 0, n = 0, k = 0;
  int64_t ld_first = 0, ld_second = 0, ldc = 0;
  int64_t stride_first = 0, stride_second = 0, stride_c = 0;
  int64_t batch = 1;
  std::string type_ab, type_c;  // "CUDA_R_32F", "CUDA_R_16F", "CUDA_R_16BF"
  bool tf32 = false;  // CUBLAS_COMPUTE_32F_FAST_TF32, else CUBLAS_COMPUTE_32F
};

CublasGemmArgs cublas_args(const LibraryGemm& g);

// What makes two products the same to time: shape, batch, layout, dtypes, and whether an
// epilogue follows ("1024x4096x1024 b1 NT bf16->f32 epilogue").
std::string product_key(const LibraryGemm& g);

// C = op(first) op(second) for `args`, column-major as cuBLAS defines each argument, on host
// buffers of the types `args` names (f32, f16, bf16; sums in double, C rounded to nearest even;
// with tf32, inputs first rounded to TF32 as cvt.rna does).
void run_cublas_on_host(const CublasGemmArgs& args, const void* first, const void* second, void* c);

// The library form of the product in `body` (a region computing `op` of `graph`), or nullopt when
// cuBLAS's strided batch cannot express its batch broadcasting.
std::optional<LibraryGemm> library_gemm(const ir::Graph& graph, const ir::Op& op, const ir::Graph& body);

}  // namespace bertc::codegen
