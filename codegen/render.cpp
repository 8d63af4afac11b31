// Rendering each launching op with its kernel family's renderer (the family the op table or a
// fused op's attribute names), shared kernel assembly, and naming kernels by the hash of their
// source.
#include "codegen/render.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <xxhash.h>

#include "codegen/family.h"
#include "ir/builder.h"
#include "passes/memory_plan.h"

namespace bertc::codegen {

// The families' renderers, each in its file family_<name>.cpp. Each throws ir::Error naming the
// op when its body has a shape the family does not handle.
KernelSpec render_pointwise(const KernelInput& in);
KernelSpec render_row(const KernelInput& in);
KernelSpec render_reduction(const KernelInput& in);
KernelSpec render_scatter_add(const KernelInput& in);
KernelSpec render_sort(const KernelInput& in);  // argsort, for scatter_add
KernelSpec render_multi_tensor(const KernelInput& in);  // the norm and the update kernels
KernelSpec render_matmul(const KernelInput& in);        // a matmul with its fused epilogue
KernelSpec render_attention(const KernelInput& in);     // attention or attention_grad

namespace {

using ir::OpKind;

// A region around a plain op: one input per operand, the op, its results as outputs.
ir::Graph single_op_body(const ir::Graph& g, const ir::Op& op) {
  ir::Builder b("op");
  std::vector<ir::Tensor> in;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const ir::TensorType& t = g.value(op.operands[i]).type;
    in.push_back(b.input(fmt::format("in{}", i), t.dtype, t.shape));
  }
  std::vector<ir::TensorType> types;
  for (ir::ValueId r : op.results) types.push_back(g.value(r).type);
  for (const ir::Tensor& t : b.copy_op(op, in, types)) b.add_output(t);
  return std::move(b).finish();
}

// Which renderer makes each family's kernels, and whether the blocks of its launches do alike
// work but the grid's tails (a sample of them counts the whole, blocks_do_alike_work): a new family
// is a line here (docs/ARCHITECTURE.md).
struct FamilyRenderer {
  ir::KernelFamily family;
  KernelSpec (*render)(const KernelInput&);
  bool blocks_alike;
};
constexpr FamilyRenderer kRenderers[] = {
    {ir::KernelFamily::Pointwise, render_pointwise, true},
    {ir::KernelFamily::RowReduction, render_row, true},
    {ir::KernelFamily::Reduction, render_reduction, true},
    // (the head of each run of equal indices sums the run: its block's work is the data's)
    {ir::KernelFamily::ScatterAdd, render_scatter_add, false},
    {ir::KernelFamily::Sort, render_sort, true},  // (one block: a radix sort's passes, whatever the keys)
    {ir::KernelFamily::MultiTensorNorm, render_multi_tensor, true},
    {ir::KernelFamily::MultiTensorUpdate, render_multi_tensor, true},
    {ir::KernelFamily::Matmul, render_matmul, true},
    {ir::KernelFamily::Attention, render_attention, true},
};

KernelSpec render_one(const KernelInput& in, ir::KernelFamily family) {
  for (const FamilyRenderer& r : kRenderers)
    if (r.family == family) return r.render(in);
  throw ir::Error(fmt::format("{} renders no kernel: the {} family has no renderer", in.op.info().name,
                              ir::enum_name(family)));
}

}  // namespace

bool blocks_do_alike_work(ir::KernelFamily family) {
  for (const FamilyRenderer& r : kRenderers)
    if (r.family == family) return r.blocks_alike;
  return true;  // (no kernel of ours: a library's)
}

std::vector<KernelParam> buffer_params(const KernelInput& in) {
  std::vector<KernelParam> params;
  for (size_t i = 0; i < in.op.operands.size(); ++i) {
    const ir::ValueId v = in.op.operands[i];
    params.push_back({ParamKind::Buffer, fmt::format("in{}", i),
                      "const " + storage_type(in.graph.value(v).type.dtype) + "*", v, {}, {}, 0, false});
  }
  for (size_t r = 0; r < in.op.results.size(); ++r) {
    const ir::ValueId v = in.op.results[r];
    params.push_back({ParamKind::Buffer, output_name(r), storage_type(in.graph.value(v).type.dtype) + "*", v, {}, {}, 0, true});
  }
  return params;
}

std::vector<std::string> input_names(const KernelInput& in) {
  std::vector<std::string> names;
  for (size_t i = 0; i < in.op.operands.size(); ++i) names.push_back(fmt::format("in{}", i));
  return names;
}

std::string output_name(size_t result) { return fmt::format("out{}", result); }

std::string kernel_text(const std::vector<KernelParam>& params, const std::string& body) {
  std::string signature;
  for (const KernelParam& p : params) signature += (signature.empty() ? "" : ", ") + p.c_type + " " + p.name;
  return fmt::format("BX_KERNEL void BX_NAME({}) {{\n{}}}\n", signature, body);
}

void store_output(Emitter& e, size_t k, const Coords& at) {
  const ir::ValueId v = e.body().outputs().at(k);
  e.line(fmt::format("bx_st({}, {}, {});", output_name(k), Emitter::linear(e.body().value(v).type.shape, at), e.at(v, at)));
}

KernelParam scratch_param(size_t floats) {
  KernelParam p;
  p.kind = ParamKind::Scratch;
  p.name = "scratch";
  p.c_type = "float*";
  p.scratch_bytes = 4 * floats + 4;  // the floats, then the block counter
  p.written = true;
  return p;
}

KernelParam workspace_param(const std::string& name, size_t bytes) {
  KernelParam p;
  p.kind = ParamKind::Workspace;
  p.name = name;
  p.c_type = "float*";
  p.scratch_bytes = bytes;
  p.written = true;
  return p;
}

void emit_last_block(Emitter& e, size_t floats, const std::function<void()>& finish) {
  e.line(fmt::format("unsigned int* counter = (unsigned int*)(scratch + {});", floats));
  e.line("bx_threadfence();  // this block's sums are visible before it is counted");
  e.line("BX_SHARED(unsigned int, last, 1);");
  e.line("bx_sync();");
  e.line("if (bx_tid_x() == 0 && bx_tid_y() == 0) {");
  e.line("  last[0] = bx_atomic_inc(counter) == (unsigned int)(bx_gdim_x() - 1);");
  e.line("  bx_threadfence();  // the other blocks' sums are read after their count (PTX memory model)");
  e.line("}");
  e.line("bx_sync();");
  e.open("if (last[0])");
  finish();
  e.line("if (bx_tid_x() == 0 && bx_tid_y() == 0) *counter = 0;");
  e.close();
}

int threads_for(long long n) { return n >= 256 ? 256 : std::max(32, static_cast<int>((n + 31) / 32 * 32)); }

int blocks_for(long long n, int threads) {
  // Enough blocks to fill any GPU of the table several times over; a grid-stride loop covers more.
  return static_cast<int>(std::max(1LL, std::min((n + threads - 1) / threads, 4096LL)));
}

std::string library_text(const LibraryGemm& g) {
  return fmt::format("gemm ta={} tb={} m={} n={} k={} batch={} ld={},{},{} strides={},{},{} types={},{}{} ws={}", g.transpose_a,
                     g.transpose_b, g.m, g.n, g.k, g.batch, g.lda, g.ldb, g.ldc, g.stride_a, g.stride_b, g.stride_c,
                     ir::dtype_name(g.ab_dtype), ir::dtype_name(g.c_dtype), g.tf32 ? " tf32" : "", g.to_workspace);
}

std::string device_source(const KernelSpec& kernel) { return "#include \"bx.h\"\n\n" + kernel.source; }

std::string host_source(const std::vector<const KernelSpec*>& kernels) {
  std::string s = "#include \"bx.h\"\n\n";
  std::set<std::string> seen;
  for (const KernelSpec* k : kernels) {
    if (k->source.empty() || !seen.insert(k->name).second) continue;
    std::string args;
    for (size_t i = 0; i < k->params.size(); ++i)
      args += fmt::format("{}({})a[{}]", i ? ", " : "", k->params[i].c_type, i);
    s += k->source + fmt::format("extern \"C\" void {0}__entry(void** a) {{ {0}({1}); }}\n\n", k->name, args);
  }
  return s;
}

ArenaLayout arena_layout(const ir::Graph& graph) {
  const passes::MemoryPlan plan = passes::plan_memory(graph);
  return {plan.arena_bytes, plan.buffers.size(), plan.offset_of};
}

namespace {

// Declares the kernel's block size in its source (BX_LAUNCH_BOUNDS), from the launch record, so
// that the two cannot disagree.
void bound_launch(KernelSpec& k) {
  const std::string entry = "BX_KERNEL void BX_NAME(";
  const size_t at = k.source.find(entry);
  if (at == std::string::npos || k.source.find(entry, at + 1) != std::string::npos)
    throw std::logic_error("a kernel source declares not exactly one BX_KERNEL void BX_NAME(...)");
  k.source.replace(at, entry.size(),
                   fmt::format("BX_KERNEL BX_LAUNCH_BOUNDS({}, {}) void BX_NAME(", k.block.x * k.block.y * k.block.z,
                               k.min_blocks_per_sm));
}

// Makes each distinct dropout offset of the source (dropout_offset) an Integer parameter after
// the others, in order of first use.
void pass_offsets(KernelSpec& k) {
  const std::string marker = "BX_DROPOUT_OFFSET(";
  std::vector<int64_t> offsets;
  for (size_t at = k.source.find(marker); at != std::string::npos; at = k.source.find(marker, at)) {
    const size_t end = k.source.find(')', at);
    const int64_t offset = std::stoll(k.source.substr(at + marker.size(), end - at - marker.size()));
    const auto it = std::find(offsets.begin(), offsets.end(), offset);
    const size_t index = static_cast<size_t>(it - offsets.begin());
    if (it == offsets.end()) offsets.push_back(offset);
    const std::string name = fmt::format("offset{}", index);
    k.source.replace(at, end + 1 - at, name);
    at += name.size();
  }
  if (offsets.empty()) return;
  const size_t signature = k.source.find("BX_NAME(");
  const size_t close = k.source.find(") {\n", signature);
  if (signature == std::string::npos || close == std::string::npos)
    throw std::logic_error("a kernel source without its BX_NAME(...) { signature");
  std::string added;
  for (size_t i = 0; i < offsets.size(); ++i) {
    KernelParam p;
    p.kind = ParamKind::Integer;
    p.name = fmt::format("offset{}", i);
    p.c_type = "bx_i64";
    p.integer = offsets[i];
    added += fmt::format("{}bx_i64 {}", k.params.empty() && i == 0 ? "" : ", ", p.name);
    k.params.push_back(std::move(p));
  }
  k.source.insert(close, added);
}

// Names a kernel after its source (a cuBLAS-only launch after the product it describes), and
// puts the name in the source.
void name_by_source(KernelSpec& k) {
  const std::string unnamed = k.source.empty() ? library_text(*k.library) : k.source;
  k.name = fmt::format("{}_{:016x}", k.source.empty() ? "cublas" : "k", XXH3_64bits(unnamed.data(), unnamed.size()));
  for (size_t at = k.source.find("BX_NAME"); at != std::string::npos; at = k.source.find("BX_NAME", at))
    k.source.replace(at, 7, k.name);
}

}  // namespace

void seal_kernel(KernelSpec& k) {
  bound_launch(k);
  name_by_source(k);
}

GraphKernels render_graph(const ir::Graph& graph, const RenderTarget& target) {
  GraphKernels out;
  out.arena = arena_layout(graph);
  for (size_t i = 0; i < graph.ops().size(); ++i) {
    const ir::Op& op = graph.ops()[i];
    if (!ir::launches_kernel(op.kind)) continue;
    const ir::KernelFamily family = ir::kernel_family(op);
    const ir::Graph body = op.kind == OpKind::Fused ? op.region.graph() : single_op_body(graph, op);
    KernelSpec k;
    try {
      k = render_one({graph, i, op, body, target}, family);
    } catch (const ir::Error& e) {
      throw ir::Error(fmt::format("rendering op {} ({}, {}): {}", i, op.info().name, op.scope, e.what()));
    }
    k.family = family;
    k.label = op.scope;
    k.op_index = i;
    if (!k.source.empty()) {
      bound_launch(k);
      pass_offsets(k);
    }
    name_by_source(k);
    out.kernels.push_back(std::move(k));
  }
  return out;
}

}  // namespace bertc::codegen
