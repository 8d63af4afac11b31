// bertc's emulated cuBLAS (cuda_emulation/, libcublas.so.13) on the emulated CUDA driver, loaded
// and called as a program loads and calls NVIDIA's: a strided batch of column-major products with
// transposes and padded leading dimensions gives the values worked out by hand here; every
// argument the cuBLAS documentation lists is refused with its status; a product's operands are
// checked as a kernel's (planted: an operand nothing wrote, a leading dimension reading past its
// allocation — each a finding that fails the stream); a product captured into a graph replays
// with the scalars it was called with; TF32 rounds inputs only on an Ampere or later GPU.
#include <cublas_api.h>
#include <cuda.h>
#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

void* open_library(const char* path) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(lib, nullptr) << dlerror();
  return lib;
}

template <typename Fn>
Fn entry(void* lib, const char* name) {
  void* f = dlsym(lib, name);
  EXPECT_NE(f, nullptr) << name;
  return reinterpret_cast<Fn>(f);
}

using Create = cublasStatus_t (*)(cublasHandle_t*);
using GemmStridedBatched = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                              const void*, const void*, cudaDataType, int, long long, const void*,
                                              cudaDataType, int, long long, const void*, void*, cudaDataType, int,
                                              long long, int, cublasComputeType_t, cublasGemmAlgo_t);

// First (gtest runs a file's tests in order, and ctest each in a process of its own): with no
// driver loaded, the emulated cuBLAS has no GPU to run on, and says so instead of crashing.
TEST(EmulatedBlasAlone, RefusesAHandleWithoutTheEmulatedDriver) {
  if (dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD)) GTEST_SKIP() << "a driver is already loaded in this process";
  void* blas = open_library(BERTC_EMULATED_CUBLAS);
  cublasHandle_t handle = nullptr;
  EXPECT_EQ(entry<Create>(blas, "cublasCreate_v2")(&handle), CUBLAS_STATUS_NOT_INITIALIZED);
}

// The driver and cuBLAS on a GPU of the suite's profile (BERTC_EMULATED_GPU, set before cuInit).
class EmulatedBlas : public ::testing::Test {
 public:
  void SetUp() override { open("p40"); }

  void open(const char* profile) {
    setenv("BERTC_EMULATED_GPU", profile, 0);
    setenv("BERTC_EMULATED_GPU_MEMORY_MB", "64", 0);
    driver = open_library(BERTC_EMULATED_CUDA);
    blas = open_library(BERTC_EMULATED_CUBLAS);
    ASSERT_EQ(entry<CUresult (*)(unsigned)>(driver, "cuInit")(0), CUDA_SUCCESS);
    CUcontext context = nullptr;
    ASSERT_EQ(entry<CUresult (*)(CUcontext*, CUdevice)>(driver, "cuDevicePrimaryCtxRetain")(&context, 0), CUDA_SUCCESS);
    ASSERT_EQ(entry<CUresult (*)(CUcontext)>(driver, "cuCtxSetCurrent")(context), CUDA_SUCCESS);
    alloc = entry<decltype(alloc)>(driver, "cuMemAlloc_v2");
    to_device = entry<decltype(to_device)>(driver, "cuMemcpyHtoDAsync_v2");
    to_host = entry<decltype(to_host)>(driver, "cuMemcpyDtoHAsync_v2");
    sync = entry<decltype(sync)>(driver, "cuStreamSynchronize");
    ASSERT_EQ(entry<CUresult (*)(CUstream*, unsigned)>(driver, "cuStreamCreate")(&stream, CU_STREAM_NON_BLOCKING),
              CUDA_SUCCESS);
    ASSERT_EQ(entry<Create>(blas, "cublasCreate_v2")(&handle), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(entry<cublasStatus_t (*)(cublasHandle_t, CUstream)>(blas, "cublasSetStream_v2")(handle, stream),
              CUBLAS_STATUS_SUCCESS);
    gemm = entry<GemmStridedBatched>(blas, "cublasGemmStridedBatchedEx");
  }

  // Device memory holding `values` (floats), or unwritten `n` floats where `values` is empty.
  CUdeviceptr device(const std::vector<float>& values, size_t n = 0) {
    CUdeviceptr p = 0;
    EXPECT_EQ(alloc(&p, std::max(values.size(), n) * sizeof(float)), CUDA_SUCCESS);
    if (!values.empty())
      EXPECT_EQ(to_device(p, values.data(), values.size() * sizeof(float), stream), CUDA_SUCCESS);
    return p;
  }
  std::vector<float> read(CUdeviceptr p, size_t n) {
    std::vector<float> out(n);
    EXPECT_EQ(to_host(out.data(), p, n * sizeof(float), stream), CUDA_SUCCESS);  // (pageable: returns done)
    return out;
  }
  void* ptr(CUdeviceptr p) { return reinterpret_cast<void*>(p); }

  // C (m x n, ldc) = alpha op(A) op(B) + beta C in f32 with the given arguments.
  cublasStatus_t product(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float* alpha,
                         CUdeviceptr a, int lda, long long sa, CUdeviceptr b, int ldb, long long sb, const float* beta,
                         CUdeviceptr c, int ldc, long long sc, int batch,
                         cublasComputeType_t compute = CUBLAS_COMPUTE_32F) {
    return gemm(handle, ta, tb, m, n, k, alpha, ptr(a), CUDA_R_32F, lda, sa, ptr(b), CUDA_R_32F, ldb, sb, beta, ptr(c),
                CUDA_R_32F, ldc, sc, batch, compute, CUBLAS_GEMM_DEFAULT);
  }

  void* driver = nullptr;
  void* blas = nullptr;
  CUresult (*alloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*to_device)(CUdeviceptr, const void*, size_t, CUstream) = nullptr;
  CUresult (*to_host)(void*, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*sync)(CUstream) = nullptr;
  CUstream stream = nullptr;
  cublasHandle_t handle = nullptr;
  GemmStridedBatched gemm = nullptr;
};

// A = [[1 2 3] [4 5 6]] (2 x 3, column-major, lda 2); B stored 2 x 3 = [[1 0 2] [0 1 1]], used
// transposed (op T: 3 x 2); the second batch's B is twice the first, A shared (stride 0).
// A B^T = [[7 5] [16 11]]; with alpha 2, beta 1 and C all 1: [[15 11] [33 23]], and for the
// second batch 2 (2 A B^T) + 1 = [[29 21] [65 45]]. C has ldc 3: its third row is padding that
// must stay as it was (-1).
TEST_F(EmulatedBlas, StridedBatchOfColumnMajorProductsWithTransposes) {
  const CUdeviceptr a = device({1, 4, 2, 5, 3, 6});
  const CUdeviceptr b = device({1, 0, 0, 1, 2, 1, /*batch 2*/ 2, 0, 0, 2, 4, 2});
  const CUdeviceptr c = device({1, 1, -1, 1, 1, -1, /*batch 2*/ 1, 1, -1, 1, 1, -1});
  const float alpha = 2, beta = 1;
  ASSERT_EQ(product(CUBLAS_OP_N, CUBLAS_OP_T, 2, 2, 3, &alpha, a, 2, 0, b, 2, 6, &beta, c, 3, 6, 2),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(sync(stream), CUDA_SUCCESS);
  EXPECT_EQ(read(c, 12), (std::vector<float>{15, 33, -1, 11, 23, -1, 29, 65, -1, 21, 45, -1}));
}

// Each cause of CUBLAS_STATUS_INVALID_VALUE the documentation lists for cublasGemmEx, an
// unsupported combination of types (NOT_SUPPORTED), a handle cublasCreate did not give
// (NOT_INITIALIZED), and the handle calls' own rules; a refused product runs nothing.
TEST_F(EmulatedBlas, RefusesWhatTheDocumentationRefuses) {
  const CUdeviceptr a = device({1, 2, 3, 4}), b = device({1, 2, 3, 4}), c = device({7, 7, 7, 7});
  const float one = 1, zero = 0;
  const auto N = CUBLAS_OP_N, T = CUBLAS_OP_T;
  EXPECT_EQ(product(N, N, 2, 2, 2, &one, a, 1, 0, b, 2, 0, &zero, c, 2, 0, 1), CUBLAS_STATUS_INVALID_VALUE);  // lda < m
  EXPECT_EQ(product(T, N, 2, 2, 2, &one, a, 2, 0, b, 1, 0, &zero, c, 2, 0, 1), CUBLAS_STATUS_INVALID_VALUE);  // ldb < k
  EXPECT_EQ(product(N, T, 2, 3, 2, &one, a, 2, 0, b, 2, 0, &zero, c, 2, 0, 1), CUBLAS_STATUS_INVALID_VALUE);  // ldb < n
  EXPECT_EQ(product(N, N, 2, 2, 2, &one, a, 2, 0, b, 2, 0, &zero, c, 1, 0, 1), CUBLAS_STATUS_INVALID_VALUE);  // ldc < m
  EXPECT_EQ(product(N, N, -1, 2, 2, &one, a, 2, 0, b, 2, 0, &zero, c, 2, 0, 1), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(product(static_cast<cublasOperation_t>(5), N, 2, 2, 2, &one, a, 2, 0, b, 2, 0, &zero, c, 2, 0, 1),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(product(N, N, 2, 2, 2, nullptr, a, 2, 0, b, 2, 0, &zero, c, 2, 0, 1), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(gemm(handle, N, N, 2, 2, 2, &one, ptr(a), CUDA_R_32F, 2, 0, ptr(b), CUDA_R_32F, 2, 0, &zero, ptr(c),
                 CUDA_R_32F, 2, 0, 1, CUBLAS_COMPUTE_32F, static_cast<cublasGemmAlgo_t>(50)),
            CUBLAS_STATUS_INVALID_VALUE);
  // f16 operands with TF32 compute, and A and B of different types: not in the table.
  EXPECT_EQ(gemm(handle, N, N, 2, 2, 2, &one, ptr(a), CUDA_R_16F, 2, 0, ptr(b), CUDA_R_16F, 2, 0, &zero, ptr(c),
                 CUDA_R_16F, 2, 0, 1, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(gemm(handle, N, N, 2, 2, 2, &one, ptr(a), CUDA_R_16BF, 2, 0, ptr(b), CUDA_R_16F, 2, 0, &zero, ptr(c),
                 CUDA_R_32F, 2, 0, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_NOT_SUPPORTED);
  int not_a_handle = 0;
  EXPECT_EQ(gemm(reinterpret_cast<cublasHandle_t>(&not_a_handle), N, N, 2, 2, 2, &one, ptr(a), CUDA_R_32F, 2, 0, ptr(b),
                 CUDA_R_32F, 2, 0, &zero, ptr(c), CUDA_R_32F, 2, 0, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_NOT_INITIALIZED);
  ASSERT_EQ(sync(stream), CUDA_SUCCESS);
  EXPECT_EQ(read(c, 4), (std::vector<float>{7, 7, 7, 7}));
  const auto set_workspace = entry<cublasStatus_t (*)(cublasHandle_t, void*, size_t)>(blas, "cublasSetWorkspace_v2");
  EXPECT_EQ(set_workspace(handle, static_cast<char*>(ptr(c)) + 4, 1024), CUBLAS_STATUS_INVALID_VALUE);  // 256-aligned
  EXPECT_EQ(set_workspace(handle, ptr(c), 16), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(entry<cublasStatus_t (*)(cublasHandle_t, cublasMath_t)>(blas, "cublasSetMathMode")(
                handle, static_cast<cublasMath_t>(42)),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(entry<cublasStatus_t (*)(cublasHandle_t, cublasPointerMode_t)>(blas, "cublasSetPointerMode_v2")(
                handle, static_cast<cublasPointerMode_t>(5)),
            CUBLAS_STATUS_INVALID_VALUE);
  int major = 0;
  EXPECT_EQ(entry<cublasStatus_t (*)(libraryPropertyType, int*)>(blas, "cublasGetProperty")(MAJOR_VERSION, &major),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(major, CUBLAS_VER_MAJOR);
  EXPECT_STREQ(entry<const char* (*)(cublasStatus_t)>(blas, "cublasGetStatusName")(CUBLAS_STATUS_INVALID_VALUE),
               "CUBLAS_STATUS_INVALID_VALUE");
}

// Planted: A allocated and never written. The call is accepted (cuBLAS does not read its operands
// then); its kernel's read of A is initcheck's finding, which fails the stream as a fault would.
TEST_F(EmulatedBlas, AnOperandNothingWroteIsAFinding) {
  const CUdeviceptr a = device({}, 4), b = device({1, 2, 3, 4}), c = device({0, 0, 0, 0});
  const float one = 1, zero = 0;
  ASSERT_EQ(product(CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, a, 2, 0, b, 2, 0, &zero, c, 2, 0, 1),
            CUBLAS_STATUS_SUCCESS);
  testing::internal::CaptureStderr();
  EXPECT_EQ(sync(stream), CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("uninitialized read"), std::string::npos);
}

// Planted: a leading dimension past the operand's allocation (B's second column 4000 bytes on,
// outside its 256 bytes): memcheck's finding when the kernel runs, as a GPU's illegal address.
TEST_F(EmulatedBlas, ALeadingDimensionPastTheAllocationIsAFinding) {
  const CUdeviceptr a = device({1, 2, 3, 4}), b = device({1, 2, 3, 4}), c = device({0, 0, 0, 0});
  const float one = 1, zero = 0;
  ASSERT_EQ(product(CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, a, 2, 0, b, 1000, 0, &zero, c, 2, 0, 1),
            CUBLAS_STATUS_SUCCESS);
  testing::internal::CaptureStderr();
  EXPECT_EQ(sync(stream), CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("outside every allocation"), std::string::npos);
}

// A product issued on a capturing stream is a kernel node of the graph, not run then; each launch
// of the graph runs it on the operands' contents at that time, with the alpha of the call (host
// pointer mode: read when called).
TEST_F(EmulatedBlas, ACapturedProductReplaysInTheGraph) {
  const CUdeviceptr a = device({1, 2, 3, 4}), b = device({1, 0, 0, 1}), c = device({0, 0, 0, 0});
  ASSERT_EQ(sync(stream), CUDA_SUCCESS);
  float alpha = 3;
  const float zero = 0;
  ASSERT_EQ(entry<CUresult (*)(CUstream, CUstreamCaptureMode)>(driver, "cuStreamBeginCapture_v2")(
                stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            CUDA_SUCCESS);
  ASSERT_EQ(product(CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &alpha, a, 2, 0, b, 2, 0, &zero, c, 2, 0, 1),
            CUBLAS_STATUS_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(entry<CUresult (*)(CUstream, CUgraph*)>(driver, "cuStreamEndCapture")(stream, &graph), CUDA_SUCCESS);
  alpha = 100;  // (the graph keeps 3)
  CUgraphNode node = nullptr;
  size_t nodes = 1;
  ASSERT_EQ(entry<CUresult (*)(CUgraph, CUgraphNode*, size_t*)>(driver, "cuGraphGetNodes")(graph, &node, &nodes),
            CUDA_SUCCESS);
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  ASSERT_EQ(entry<CUresult (*)(CUgraphNode, CUgraphNodeType*)>(driver, "cuGraphNodeGetType")(node, &type), CUDA_SUCCESS);
  EXPECT_EQ(nodes, 1u);
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_KERNEL);
  EXPECT_EQ(read(c, 4), (std::vector<float>{0, 0, 0, 0}));  // (captured, not run)
  CUgraphExec exec = nullptr;
  ASSERT_EQ(entry<CUresult (*)(CUgraphExec*, CUgraph, unsigned long long)>(driver, "cuGraphInstantiateWithFlags")(
                &exec, graph, 0),
            CUDA_SUCCESS);
  const auto launch = entry<CUresult (*)(CUgraphExec, CUstream)>(driver, "cuGraphLaunch");
  ASSERT_EQ(launch(exec, stream), CUDA_SUCCESS);
  EXPECT_EQ(read(c, 4), (std::vector<float>{3, 6, 9, 12}));  // 3 A I
  const std::vector<float> twice{2, 0, 0, 2};
  ASSERT_EQ(to_device(b, twice.data(), 16, stream), CUDA_SUCCESS);
  ASSERT_EQ(launch(exec, stream), CUDA_SUCCESS);
  EXPECT_EQ(read(c, 4), (std::vector<float>{6, 12, 18, 24}));  // 3 A (2 I)
}

// 1 + 2^-12 times 1 with CUBLAS_COMPUTE_32F_FAST_TF32: TF32 keeps 10 mantissa bits, so on an A100 the
// input rounds to 1 (2^-12 is below half of TF32's 2^-10 step); on a P40 (no TF32) it stays exact.
// 1 + 2^-11 (a tie) rounds away from zero to 1 + 2^-10, as cvt.rna does.
float tf32_product(EmulatedBlas& t, float x) {
  const CUdeviceptr a = t.device({x}), b = t.device({1}), c = t.device({0});
  const float one = 1, zero = 0;
  EXPECT_EQ(t.product(CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, a, 1, 0, b, 1, 0, &zero, c, 1, 0, 1,
                      CUBLAS_COMPUTE_32F_FAST_TF32),
            CUBLAS_STATUS_SUCCESS);
  return t.read(c, 1)[0];
}

TEST_F(EmulatedBlas, NoTf32BeforeAmpere) {
  EXPECT_EQ(tf32_product(*this, 1 + std::ldexp(1.0f, -12)), 1 + std::ldexp(1.0f, -12));
}

class EmulatedBlasOnA100 : public EmulatedBlas {
 public:
  void SetUp() override {
    // (ctest runs each test in a process of its own; run together, the first test's GPU stays)
    if (const char* g = std::getenv("BERTC_EMULATED_GPU"); g && std::string(g) != "a100")
      GTEST_SKIP() << "this process's emulated GPU is already " << g;
    open("a100");
  }
};

TEST_F(EmulatedBlasOnA100, Tf32RoundsInputsToNearestTiesAway) {
  EXPECT_EQ(tf32_product(*this, 1 + std::ldexp(1.0f, -12)), 1.0f);
  EXPECT_EQ(tf32_product(*this, 1 + std::ldexp(1.0f, -11)), 1 + std::ldexp(1.0f, -10));
}

}  // namespace
