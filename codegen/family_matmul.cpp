// The matmul family: a matrix product (plain, or a fused group with its epilogue) as one bx_gemm
// instantiation of the prelude — strategy, tiles, layouts and vector widths are its template
// arguments — followed by the group's epilogue (bias, GELU, dropout, residual, accumulation,
// cast) applied to each accumulator at its (row, column) before the one store.
//
// Batches: a product whose right operand has no batch dims runs as one tall GEMM (the left
// operand's batch folds into M); any other batch runs one grid layer (blockIdx.z) per result
// batch element, each operand offset through its broadcast strides.
#include <fmt/format.h>

#include "codegen/family.h"

namespace bertc::codegen {
namespace {

using ir::OpKind;

int64_t numel(const ir::Shape& s, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < to; ++i) n *= s[i];
  return n;
}

// The largest vector (at most 16 bytes) of elements that divides a row of `row_length`.
int vector_elements(int64_t row_length, ir::DType dtype) {
  int v = static_cast<int>(16 / ir::dtype_bytes(dtype));
  while (v > 1 && row_length % v != 0) v /= 2;
  return v;
}

// Every epilogue result at `at`, all computed before the first store: a result may be written in
// the place of an input it reads (a gradient accumulator), so no store may precede a load.
void store_outputs(Emitter& e, const ir::Shape& shape, const Coords& at) {
  const auto& outputs = e.body().outputs();
  for (ir::ValueId v : outputs) {
    if (e.body().value(v).type.shape != shape) throw ir::Error("matmul: an epilogue result of another shape than the product");
    e.at(v, at);
  }
  for (size_t k = 0; k < outputs.size(); ++k) store_output(e, k, at);
}

struct Operand {
  size_t input;         // region input index
  ir::Shape batch;      // leading dims
  int64_t rows, cols;   // the stored matrix (last two dims)
};

Operand operand(const ir::Graph& body, ir::ValueId v) {
  const auto inputs = body.values_of(OpKind::Input);
  Operand o{};
  bool found = false;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i] == v) o.input = i, found = true;
  if (!found) throw ir::Error("matmul: an operand computed inside the group (the epilogue family fuses only after the product)");
  const ir::Shape& s = body.value(v).type.shape;
  o.batch.assign(s.begin(), s.end() - 2);
  o.rows = s[s.size() - 2];
  o.cols = s.back();
  return o;
}

// The element offset of operand `o`'s matrix for result batch coordinates `z` (right-aligned
// NumPy broadcasting: size-1 dims stay at 0).
std::string batch_offset(const Operand& o, const Coords& z) {
  std::string sum;
  int64_t stride = o.rows * o.cols;
  for (size_t i = o.batch.size(); i-- > 0;) {
    const size_t zi = z.size() - (o.batch.size() - i);
    if (o.batch[i] != 1) sum += fmt::format("{}{} * {}", sum.empty() ? "" : " + ", z[zi], stride);
    stride *= o.batch[i];
  }
  return sum.empty() ? "0" : sum;
}

}  // namespace

namespace {

// cuBLAS computes the product; a plain one needs nothing more, any other gets a generated epilogue
// kernel over the result, reading the product from the f32 workspace (row-major, as the result).
KernelSpec render_library(const KernelInput& in, const LibraryGemm& g) {
  KernelSpec spec;
  spec.library = g;
  spec.strategy = "cublas";
  if (!g.to_workspace) {
    const ir::Graph& graph = in.graph;
    for (ir::ValueId v : {g.a, g.b})
      spec.params.push_back({ParamKind::Buffer, "", storage_type(graph.value(v).type.dtype), v, {}, {}, 0, false});
    spec.params.push_back({ParamKind::Buffer, "", storage_type(g.c_dtype), g.c, {}, {}, 0, true});
    return spec;
  }
  const ir::Op* mm = nullptr;
  for (const ir::Op& op : in.body.ops())
    if (op.kind == OpKind::Matmul) mm = &op;
  const ir::TensorType& result = in.body.value(mm->results[0]).type;
  spec.params = buffer_params(in);
  KernelParam ws;
  ws.kind = ParamKind::Workspace;
  ws.name = "ws";
  ws.c_type = "const float*";
  ws.scratch_bytes = g.workspace_bytes();
  spec.params.push_back(ws);
  Emitter e(in.body, input_names(in));
  const int64_t n = result.numel();
  e.open(fmt::format("for (bx_i64 i = (bx_i64)bx_bid_x() * bx_bdim_x() + bx_tid_x(); i < {}; "
                     "i += (bx_i64)bx_gdim_x() * bx_bdim_x())",
                     n));
  const Coords at = e.decompose(result.shape, "i");
  e.bind(mm->results[0], at,
         result.dtype == ir::DType::F32 ? "ws[i]" : fmt::format("bx_round_{}(ws[i])", ir::dtype_name(result.dtype)));
  store_outputs(e, result.shape, at);
  e.close();
  spec.source = kernel_text(spec.params, e.take());
  spec.block = {threads_for(n)};
  spec.grid = {blocks_for(n, spec.block.x)};
  return spec;
}

// The product as a generated kernel (strategy and tiles of matrix_strategy.h).
KernelSpec render_generated(const KernelInput& in) {
  const ir::Graph& body = in.body;
  const ir::Op* mm = nullptr;
  for (const ir::Op& op : body.ops())
    if (op.kind == OpKind::Matmul) {
      if (mm) throw ir::Error("matmul: two products in one group");
      mm = &op;
    }
  if (!mm) throw ir::Error("matmul: no product in the group");
  const bool ta = mm->attr<bool>("transpose_a"), tb = mm->attr<bool>("transpose_b");
  const Operand a = operand(body, mm->operands[0]), b = operand(body, mm->operands[1]);
  const ir::TensorType& result = body.value(mm->results[0]).type;
  const ir::DType dtype = body.value(mm->operands[0]).type.dtype;
  if (body.value(mm->operands[1]).type.dtype != dtype || !ir::is_float(dtype))
    throw ir::Error("matmul: operands of two dtypes, or not floating point");
  const int64_t M = ta ? a.cols : a.rows, K = ta ? a.rows : a.cols, N = tb ? b.rows : b.cols;
  const ir::Shape rbatch(result.shape.begin(), result.shape.end() - 2);
  // The left operand's batch folds into M when the right one has none and A's rows are contiguous.
  const bool fold = numel(b.batch, 0, b.batch.size()) == 1 && !ta && !rbatch.empty();
  const int64_t batch = numel(rbatch, 0, rbatch.size());
  const int64_t rows = fold ? M * batch : M, layers = fold ? 1 : batch;

  const MatrixStrategy s = choose_strategy(in.target.sm, dtype, in.target.tf32);
  const GemmTiles t = default_gemm_tiles(s, in.target.sm);
  const std::string T = storage_type(dtype);
  const int va = vector_elements(ta ? M : K, dtype), vb = vector_elements(tb ? K : N, dtype);
  if (rows > int64_t{65535} * t.bm || layers > 65535 || rows * N > (int64_t{1} << 31))
    throw ir::Error(fmt::format("matmul: {} x {} x {} (x{}) is beyond one launch's grid", rows, N, K, layers));

  Emitter e(body, input_names(in));
  e.line(fmt::format("typedef bx_gemm<bx_{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}> gemm;", strategy_name(s), T,
                     t.bm, t.bn, t.bk, t.wgm, t.wgn, t.stages, ta ? "false" : "true", tb ? "true" : "false", va, vb,
                     uses_cp_async(in.target.sm) ? "true" : "false"));
  e.line(fmt::format("BX_SHARED({}, smem, gemm::SMEM);", T));
  e.line("const bx_i64 z = bx_bid_z();");
  const Coords z = fold ? Coords{} : e.decompose(rbatch, "z");
  e.line("const int m0 = bx_bid_y() * " + std::to_string(t.bm) + ", n0 = bx_bid_x() * " + std::to_string(t.bn) + ";");
  e.line("float acc[gemm::ACC];");
  e.line(fmt::format("gemm::run(acc, smem, in{} + {}, {}, in{} + {}, {}, {}, {}, {}, m0, n0);", a.input,
                     fold ? "0" : batch_offset(a, z), a.cols, b.input, fold ? "0" : batch_offset(b, z), b.cols, rows, N,
                     K));
  // The epilogue runs once per accumulator, in a loop (unrolled, its body repeated ACC times
  // doubled sm_70's compile time). acc[i] with a run-time i would put acc[] in local memory, so
  // each value is picked by a jump over constant indices: acc[] stays in registers.
  const int accumulators = t.bm * t.bn / t.threads();
  e.line(fmt::format("static_assert(gemm::ACC == {}, \"one case per accumulator below\");", accumulators));
  e.open("for (int i = 0; i < gemm::ACC; ++i)");
  e.line("float value = 0.0f;");
  std::string cases;
  for (int k = 0; k < accumulators; ++k) cases += fmt::format("{}case {}: value = acc[{}]; break;", k % 4 ? " " : (k ? "\n" : ""), k, k);
  e.open("switch (i)");
  for (size_t from = 0, to; from < cases.size(); from = to + 1) {
    to = cases.find('\n', from);
    if (to == std::string::npos) to = cases.size();
    e.line(cases.substr(from, to - from));
  }
  e.close();
  e.line("int r, c;");
  e.line("gemm::product::coord(i, r, c);");
  e.line("const bx_i64 m = m0 + r, n = n0 + c;");
  e.open(fmt::format("if (m < {} && n < {})", rows, N));
  Coords at = fold ? e.decompose(ir::Shape(result.shape.begin(), result.shape.end() - 1), "m") : z;
  if (!fold) at.push_back("m");
  at.push_back("n");
  const std::string value = dtype == ir::DType::F32 ? "value" : fmt::format("bx_round_{}(value)", ir::dtype_name(dtype));
  e.bind(mm->results[0], at, value);
  store_outputs(e, result.shape, at);
  e.close();
  e.close();

  KernelSpec spec;
  spec.params = buffer_params(in);
  spec.source = kernel_text(spec.params, e.take());
  spec.block = {t.threads()};
  spec.grid = {static_cast<int>((N + t.bn - 1) / t.bn), static_cast<int>((rows + t.bm - 1) / t.bm), static_cast<int>(layers)};
  spec.cooperative = true;
  spec.strategy = strategy_name(s);
  return spec;
}

}  // namespace

KernelSpec render_matmul(const KernelInput& in) {
  std::optional<LibraryGemm> g = library_gemm(in.graph, in.op, in.body);
  if (!g) return render_generated(in);
  // Precision tf32: f32 products through cuBLAS's TF32 compute too (choose_strategy refuses the
  // arch if it has no TF32 tensor cores).
  g->tf32 = choose_strategy(in.target.sm, g->ab_dtype, in.target.tf32) == MatrixStrategy::Tf32;
  // A choice measured on the GPU (--autotune) overrides the rule.
  const std::string key = product_key(*g);
  const auto tuned = in.target.tuned.find(key);
  const MatmulPolicy choice = tuned != in.target.tuned.end() ? tuned->second : in.target.matmul;
  KernelSpec spec = use_library(choice, !g->to_workspace, 2.0 * g->m * g->n * g->k * g->batch) ? render_library(in, *g)
                                                                                                : render_generated(in);
  spec.product = key;
  return spec;
}

}  // namespace bertc::codegen
