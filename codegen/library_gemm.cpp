// cuBLAS launch records: from a matmul group, to cuBLAS's arguments, and run on the host.
#include "codegen/library_gemm.h"

#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "ir/float16.h"

namespace bertc::codegen {
namespace {

using ir::OpKind;

// A matrix library's types: f32, f16 and bf16 matrices.
ir::DType library_type(ir::DType d) {
  if (d == ir::DType::F32 || d == ir::DType::F16 || d == ir::DType::BF16) return d;
  throw std::invalid_argument(fmt::format("a matrix library takes f32, f16 or bf16 matrices, not {}", ir::dtype_name(d)));
}

int64_t numel(const ir::Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

ir::Shape without_leading_ones(ir::Shape s) {
  while (!s.empty() && s.front() == 1) s.erase(s.begin());
  return s;
}

}  // namespace

std::string product_key(const LibraryGemm& g) {
  return fmt::format("{}x{}x{} b{} {}{} {}->{}{} {}", g.m, g.n, g.k, g.batch, g.transpose_a ? 'T' : 'N',
                     g.transpose_b ? 'T' : 'N', ir::dtype_name(g.ab_dtype), ir::dtype_name(g.c_dtype),
                     g.tf32 ? " tf32" : "", g.to_workspace ? "epilogue" : "plain");
}

LibraryProductArgs library_product_args(const LibraryGemm& g) {
  LibraryProductArgs a;
  // Column-major views of the row-major buffers: B's is B^T (or B when stored transposed), so
  // C^T (n x m) = op(view of B) op(view of A), each transposed exactly when the IR's is.
  a.transpose_first = g.transpose_b;
  a.transpose_second = g.transpose_a;
  a.m = g.n, a.n = g.m, a.k = g.k;
  a.ld_first = g.ldb, a.ld_second = g.lda, a.ldc = g.ldc;
  a.stride_first = g.stride_b, a.stride_second = g.stride_a, a.stride_c = g.stride_c;
  a.batch = g.batch;
  a.operand_type = library_type(g.ab_dtype);
  a.result_type = library_type(g.to_workspace ? ir::DType::F32 : g.c_dtype);
  a.tf32 = g.tf32;
  return a;
}

namespace {

// The BLAS definition over element accessors: X = op(first) is m x k, Y = op(second) is k x n;
// element (i, j) of a column-major matrix with leading dimension ld is at i + j * ld.
template <typename First, typename Second, typename Store>
void column_major_gemm(const LibraryProductArgs& a, First first, Second second, Store store) {
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t j = 0; j < a.n; ++j)
      for (int64_t i = 0; i < a.m; ++i) {
        double sum = 0;
        for (int64_t l = 0; l < a.k; ++l) {
          const float xv = first(b * a.stride_first + (a.transpose_first ? l + i * a.ld_first : i + l * a.ld_first));
          const float yv = second(b * a.stride_second + (a.transpose_second ? j + l * a.ld_second : l + j * a.ld_second));
          sum += static_cast<double>(xv) * yv;
        }
        store(b * a.stride_c + i + j * a.ldc, static_cast<float>(sum));
      }
}

enum class Storage { F32, F16, BF16 };

Storage storage_of(ir::DType type) {
  if (type == ir::DType::F32) return Storage::F32;
  if (type == ir::DType::F16) return Storage::F16;
  if (type == ir::DType::BF16) return Storage::BF16;
  throw std::invalid_argument(fmt::format("no host product of {} matrices", ir::dtype_name(type)));
}

float load_typed(const void* p, int64_t i, Storage type) {
  if (type == Storage::F32) return static_cast<const float*>(p)[i];
  uint16_t bits;
  std::memcpy(&bits, static_cast<const unsigned char*>(p) + 2 * i, 2);
  return type == Storage::BF16 ? ir::from_bf16_bits(bits) : ir::from_f16_bits(bits);
}

void store_typed(void* p, int64_t i, float v, Storage type) {
  if (type == Storage::F32) {
    static_cast<float*>(p)[i] = v;
    return;
  }
  const uint16_t bits = type == Storage::BF16 ? ir::bf16_bits(v) : ir::f16_bits(v);
  std::memcpy(static_cast<unsigned char*>(p) + 2 * i, &bits, 2);
}

}  // namespace

void run_library_product_on_host(const LibraryProductArgs& a, const void* first, const void* second, void* c) {
  const Storage ab = storage_of(a.operand_type), out = storage_of(a.result_type);
  auto load = [&](const void* p, int64_t i) {
    const float v = load_typed(p, i, ab);
    return a.tf32 ? ir::round_to_tf32(v) : v;
  };
  column_major_gemm(a, [&](int64_t i) { return load(first, i); }, [&](int64_t i) { return load(second, i); },
                    [&](int64_t i, float v) { store_typed(c, i, v, out); });
}

std::optional<LibraryGemm> library_gemm(const ir::Graph& graph, const ir::Op& op, const ir::Graph& body) {
  const ir::Op* mm = nullptr;
  size_t computing = 0;
  for (const ir::Op& o : body.ops()) {
    if (o.kind == OpKind::Matmul) mm = &o;
    if (o.kind != OpKind::Input && o.kind != OpKind::Constant) ++computing;
  }
  if (!mm) return std::nullopt;
  const auto inputs = body.values_of(OpKind::Input);
  auto outer = [&](ir::ValueId v) -> std::optional<ir::ValueId> {
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i] == v) return op.operands[i];
    return std::nullopt;
  };
  const auto a_value = outer(mm->operands[0]), b_value = outer(mm->operands[1]);
  if (!a_value || !b_value) return std::nullopt;
  const ir::TensorType& at = graph.value(*a_value).type;
  const ir::TensorType& bt = graph.value(*b_value).type;
  const ir::TensorType& rt = body.value(mm->results[0]).type;
  LibraryGemm g;
  g.transpose_a = mm->attr<bool>("transpose_a");
  g.transpose_b = mm->attr<bool>("transpose_b");
  const int64_t a_rows = at.shape[at.shape.size() - 2], a_cols = at.shape.back();
  const int64_t b_rows = bt.shape[bt.shape.size() - 2], b_cols = bt.shape.back();
  g.m = g.transpose_a ? a_cols : a_rows;
  g.k = g.transpose_a ? a_rows : a_cols;
  g.n = g.transpose_b ? b_rows : b_cols;
  g.lda = a_cols, g.ldb = b_cols, g.ldc = g.n;
  const ir::Shape rbatch(rt.shape.begin(), rt.shape.end() - 2);
  const ir::Shape abatch(at.shape.begin(), at.shape.end() - 2), bbatch(bt.shape.begin(), bt.shape.end() - 2);
  if (numel(bbatch) == 1 && !g.transpose_a) {  // A's batch folds into its rows
    g.m *= numel(rbatch);
  } else {
    g.batch = numel(rbatch);
    auto stride = [&](const ir::Shape& batch, int64_t matrix) -> std::optional<int64_t> {
      if (numel(batch) == 1) return 0;
      if (without_leading_ones(batch) == without_leading_ones(rbatch)) return matrix;
      return std::nullopt;  // a broadcast inside the batch dims: not one strided batch
    };
    const auto sa = stride(abatch, a_rows * a_cols), sb = stride(bbatch, b_rows * b_cols);
    if (!sa || !sb) return std::nullopt;
    g.stride_a = *sa, g.stride_b = *sb, g.stride_c = g.m * g.n;
  }
  g.a = *a_value, g.b = *b_value;
  g.ab_dtype = at.dtype;
  const bool plain = computing == 1 && body.outputs().size() == 1 && body.outputs()[0] == mm->results[0];
  g.to_workspace = !plain;
  g.c = plain ? op.results[0] : 0;
  g.c_dtype = plain ? rt.dtype : ir::DType::F32;
  return g;
}

}  // namespace bertc::codegen
