// The pointwise family. A group that is elementwise over one size (the common case: bias adds,
// activations, casts, dropout) runs flat: each thread takes V consecutive elements with vector
// loads and stores of up to 16 bytes. Any other group (slices, pads, permutes, concatenations,
// gathers, broadcasts) runs one thread per element of its largest output, grid-stride; smaller
// (broadcast) outputs are written by the threads at their origin along the broadcast axes.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "codegen/family.h"

namespace bertc::codegen {
namespace {

using ir::OpKind;

// Whether every value of the group has n elements or one, and every op is elementwise (or a
// reshape, or a broadcast of one element): then linear indices are all the kernel needs.
bool elementwise_over(const ir::Graph& body, int64_t n) {
  for (const ir::Op& op : body.ops()) {
    if (op.kind == OpKind::Slice || op.kind == OpKind::Pad || op.kind == OpKind::Permute || op.kind == OpKind::Concat ||
        op.kind == OpKind::Gather)
      return false;
    for (ir::ValueId v : op.results) {
      const int64_t m = body.value(v).type.numel();
      if (m != n && m != 1) return false;
    }
    if (op.kind == OpKind::Broadcast && body.value(op.operands[0]).type.numel() != 1 &&
        body.value(op.operands[0]).type.numel() != n)
      return false;
  }
  for (ir::ValueId v : body.outputs())
    if (body.value(v).type.numel() != n) return false;
  return true;
}

// Elements per thread: vector accesses of at most 16 bytes for every float buffer of n elements.
int vector_width(const KernelInput& in, int64_t n) {
  size_t widest = 1;
  for (ir::ValueId v : in.op.operands)
    if (in.graph.value(v).type.numel() == n && ir::is_float(in.graph.value(v).type.dtype))
      widest = std::max(widest, ir::dtype_bytes(in.graph.value(v).type.dtype));
  for (ir::ValueId v : in.op.results)
    if (ir::is_float(in.graph.value(v).type.dtype)) widest = std::max(widest, ir::dtype_bytes(in.graph.value(v).type.dtype));
  const int width = static_cast<int>(16 / widest);
  return n % width == 0 ? width : 1;
}

// The flat kernel: V elements per thread, lane by lane.
std::string flat_body(const KernelInput& in, int64_t n, int width) {
  Emitter e(in.body, input_names(in));
  const auto inputs = in.body.values_of(OpKind::Input);
  const auto& outputs = in.body.outputs();
  e.open(fmt::format("for (bx_i64 i0 = ((bx_i64)bx_bid_x() * bx_bdim_x() + bx_tid_x()) * {0}; i0 < {1}; "
                     "i0 += (bx_i64)bx_gdim_x() * bx_bdim_x() * {0})",
                     width, n));
  std::vector<bool> vector_in(inputs.size(), false);
  for (size_t k = 0; k < inputs.size(); ++k) {
    const ir::TensorType& t = in.body.value(inputs[k]).type;
    if (t.numel() != n || !ir::is_float(t.dtype)) continue;
    vector_in[k] = true;
    e.line(fmt::format("float vin{0}[{1}];", k, width));
    e.line(fmt::format("bx_ldv<{}>(in{}, i0, vin{});", width, k, k));
  }
  for (size_t k = 0; k < outputs.size(); ++k)
    if (ir::is_float(in.body.value(outputs[k]).type.dtype)) e.line(fmt::format("float vout{}[{}];", k, width));
  for (int lane = 0; lane < width; ++lane) {
    e.open(fmt::format("/* element i0 + {} */", lane));
    e.flat(n, fmt::format("(i0 + {})", lane));
    for (size_t k = 0; k < inputs.size(); ++k)
      if (vector_in[k])
        e.bind(inputs[k], Coords(in.body.value(inputs[k]).type.shape.size(), ""), fmt::format("vin{}[{}]", k, lane));
    for (size_t k = 0; k < outputs.size(); ++k) {
      const std::string v = e.at(outputs[k], {});
      if (ir::is_float(in.body.value(outputs[k]).type.dtype)) e.line(fmt::format("vout{}[{}] = {};", k, lane, v));
      else e.line(fmt::format("bx_st({}, i0 + {}, {});", output_name(k), lane, v));
    }
    e.close();
  }
  for (size_t k = 0; k < outputs.size(); ++k)
    if (ir::is_float(in.body.value(outputs[k]).type.dtype))
      e.line(fmt::format("bx_stv<{}>({}, i0, vout{});", width, output_name(k), k));
  e.close();
  return e.take();
}

// The general kernel: one thread per element of the domain (the largest output).
std::string indexed_body(const KernelInput& in, const ir::Shape& domain, int64_t n) {
  const auto& outputs = in.body.outputs();
  Emitter e(in.body, input_names(in));
  e.open(fmt::format("for (bx_i64 i = (bx_i64)bx_bid_x() * bx_bdim_x() + bx_tid_x(); i < {}; "
                     "i += (bx_i64)bx_gdim_x() * bx_bdim_x())",
                     n));
  const Coords at = e.decompose(domain, "i");
  // Every full-size result before the first store: one may take the place of an input it reads.
  for (ir::ValueId v : outputs)
    if (in.body.value(v).type.shape == domain) e.at(v, at);
  for (size_t k = 0; k < outputs.size(); ++k) {
    const ir::Shape& s = in.body.value(outputs[k]).type.shape;
    if (s == domain) {
      store_output(e, k, at);
      continue;
    }
    // A smaller output broadcasts to the domain (NumPy rules): written where its broadcast
    // coordinates are 0, so each of its elements once.
    if (s.size() > domain.size()) throw ir::Error("pointwise: an output of higher rank than the kernel's domain");
    Coords c(s.size());
    std::vector<std::string> guard;
    for (size_t j = 0; j < s.size(); ++j) {
      const size_t d = j + domain.size() - s.size();
      if (s[j] == domain[d]) {
        c[j] = at[d];
      } else if (s[j] == 1) {
        c[j].assign(1, '0');  // not = "0": GCC 12 warns falsely (-Wrestrict)
        guard.push_back(at[d] + " == 0");
      } else {
        throw ir::Error("pointwise: an output that does not broadcast to the kernel's domain");
      }
    }
    for (size_t d = 0; d + s.size() < domain.size(); ++d) guard.push_back(at[d] + " == 0");
    if (guard.empty()) guard.push_back("true");
    e.open(fmt::format("if ({})", fmt::join(guard, " && ")));
    store_output(e, k, c);
    e.close();
  }
  e.close();
  return e.take();
}

}  // namespace

KernelSpec render_pointwise(const KernelInput& in) {
  ir::Shape domain;
  int64_t n = 1;
  for (ir::ValueId v : in.body.outputs()) {
    const ir::TensorType& t = in.body.value(v).type;
    if (t.numel() > n || (t.numel() == n && t.shape.size() > domain.size())) n = t.numel(), domain = t.shape;
  }
  const bool flat = elementwise_over(in.body, n);
  const int width = flat ? vector_width(in, n) : 1;
  KernelSpec k;
  k.params = buffer_params(in);
  k.source = kernel_text(k.params, flat ? flat_body(in, n, width) : indexed_body(in, domain, n));
  k.block = {threads_for(n / width)};
  k.grid = {blocks_for(n / width, k.block.x)};
  k.cooperative = false;
  return k;
}

}  // namespace bertc::codegen
