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

// The workspace a device's matrix library is given (cuBLAS's, by cublasSetWorkspace), set
// explicitly so that a captured product never allocates: 32 MiB covers the Hopper kernels' needs
// (the documented minimum for sm_90 is 32 MiB). Also what --batch-size auto plans for
// (train/micro_batch).
constexpr uint64_t kLibraryWorkspaceBytes = uint64_t{32} << 20;

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

// A product as a matrix library's strided-batch GEMM takes it, in device-neutral terms: for each of
// `batch` matrices C = op(first) op(second), column-major (the BLAS convention), beta = 0. So the
// row-major product runs as C^T = op(B)^T op(A)^T: `first` is the IR's B and `second` its A. A
// device runs it with its library (Device::library_product: cuBLAS's cublasGemmStridedBatchedEx
// on a GPU, whose types and compute modes the CUDA device maps these to) or on the host
// (run_library_product_on_host).
struct LibraryProductArgs {
  bool transpose_first = false, transpose_second = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t ld_first = 0, ld_second = 0, ldc = 0;
  int64_t stride_first = 0, stride_second = 0, stride_c = 0;
  int64_t batch = 1;
  ir::DType operand_type = ir::DType::F32, result_type = ir::DType::F32;  // f32, f16 or bf16 each
  bool tf32 = false;  // f32 operands rounded to TF32 (a tensor-core product), else full f32
};

// Throws std::invalid_argument for a product of other types than f32, f16 and bf16.
LibraryProductArgs library_product_args(const LibraryGemm& g);

// What makes two products the same to time: shape, batch, layout, dtypes, and whether an
// epilogue follows ("1024x4096x1024 b1 NT bf16->f32 epilogue").
std::string product_key(const LibraryGemm& g);

// C = op(first) op(second) for `args`, column-major as BLAS defines each argument, on host
// buffers of the types `args` names (f32, f16, bf16; sums in double, C rounded to nearest even;
// with tf32, inputs first rounded to TF32 as cvt.rna does).
void run_library_product_on_host(const LibraryProductArgs& args, const void* first, const void* second, void* c);

// The library form of the product in `body` (a region computing `op` of `graph`), or nullopt when
// cuBLAS's strided batch cannot express its batch broadcasting.
std::optional<LibraryGemm> library_gemm(const ir::Graph& graph, const ir::Op& op, const ir::Graph& body);

}  // namespace bertc::codegen
