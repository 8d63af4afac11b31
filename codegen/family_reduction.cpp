// The reduction family: a sum, mean or max over some axes with pointwise ops before and after.
// When the last axis is reduced, a block reduces each output element over contiguous memory;
// when it is kept (bias gradients: sums over batch and sequence), a block of 32 x 8 threads
// takes 32 neighbouring outputs, so that each row of the input is read coalesced.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "codegen/family.h"

namespace bertc::codegen {
namespace {

using ir::OpKind;

struct Reduction {
  const ir::Op* op = nullptr;
  ir::Shape input, kept, reduced;
  std::vector<bool> is_reduced;  // per input axis
  bool keepdim = false;
  std::string init, combine;     // "0.0f" / "-bx_inf()"; "{a} + {b}" / "bx_fmax({a}, {b})"
};

Reduction analyse(const ir::Graph& body) {
  Reduction r;
  for (const ir::Op& op : body.ops())
    if (op.info().traits.family == ir::KernelFamily::Reduction) {
      if (r.op) throw ir::Error("reduction family: more than one reduction in the group");
      r.op = &op;
    }
  if (!r.op) throw ir::Error("reduction family: no reduction in the group");
  r.input = body.value(r.op->operands[0]).type.shape;
  r.is_reduced.assign(r.input.size(), false);
  for (int64_t a : r.op->attr<std::vector<int64_t>>("axes"))
    r.is_reduced.at(static_cast<size_t>(a < 0 ? a + static_cast<int64_t>(r.input.size()) : a)) = true;
  for (size_t i = 0; i < r.input.size(); ++i) (r.is_reduced[i] ? r.reduced : r.kept).push_back(r.input[i]);
  r.keepdim = r.op->attr<bool>("keepdim");
  const bool max = r.op->kind == OpKind::ReduceMax;
  r.init = max ? "-bx_inf()" : "0.0f";
  r.combine = max ? "bx_fmax({0}, {1})" : "{0} + {1}";
  return r;
}

// Input coordinates from kept and reduced coordinates.
Coords merge(const Reduction& r, const Coords& kept, const Coords& reduced) {
  Coords c;
  size_t k = 0, d = 0;
  for (size_t i = 0; i < r.input.size(); ++i) c.push_back(r.is_reduced[i] ? reduced.at(d++) : kept.at(k++));
  return c;
}

// The result's coordinates (with zeros at reduced axes under keepdim).
Coords result_at(const Reduction& r, const Coords& kept) { return r.keepdim ? merge(r, kept, Coords(r.reduced.size(), "0")) : kept; }

class ReductionKernel {
 public:
  ReductionKernel(const KernelInput& in, Emitter& e) : in_(in), e_(e), r_(analyse(in.body)) {
    const ir::Shape result = in.body.value(r_.op->result()).type.shape;
    for (size_t k = 0; k < in.body.outputs().size(); ++k) {
      const ir::Shape& s = in.body.value(in.body.outputs()[k]).type.shape;
      if (s == result) final_.push_back(k);
      else if (s == r_.input) visited_.push_back(k);
      else throw ir::Error(fmt::format("reduction family: output {} has a shape the kernel cannot write", k));
    }
    inner_ = r_.input.empty() || r_.is_reduced.back();
  }

  int64_t outputs() const { return ir::checked_numel(r_.kept); }
  int64_t terms() const { return ir::checked_numel(r_.reduced); }
  bool inner() const { return inner_; }

  void emit() { inner_ ? emit_inner() : emit_outer(); }

 private:
  // Folds the input at `full` into `acc` and writes input-shaped outputs there.
  void visit(const std::string& acc, const Coords& full) {
    e_.line(fmt::format("{} = {};", acc, fmt::format(fmt::runtime(r_.combine), acc, e_.at(r_.op->operands[0], full))));
    for (size_t k : visited_) store_output(e_, k, full);
  }
  void finish(const std::string& total, const Coords& kept) {
    std::string value = total;
    if (r_.op->kind == OpKind::ReduceMean) value = fmt::format("{} / {}", total, float_literal(static_cast<double>(terms())));
    const Coords at = result_at(r_, kept);
    const ir::DType d = in_.body.value(r_.op->result()).type.dtype;
    if (d == ir::DType::F16) value = "bx_round_f16(" + value + ")";
    if (d == ir::DType::BF16) value = "bx_round_bf16(" + value + ")";
    e_.bind(r_.op->result(), at, e_.local("float", value));
    for (size_t k : final_) store_output(e_, k, at);
  }

  void emit_inner() {
    e_.line("BX_SHARED(float, red, 32);");
    e_.open(fmt::format("for (bx_i64 o = bx_bid_x(); o < {}; o += bx_gdim_x())", outputs()));
    const Coords kept = e_.decompose(r_.kept, "o");
    e_.line(fmt::format("float acc = {};", r_.init));
    e_.open(fmt::format("for (bx_i64 k = bx_tid_x(); k < {}; k += bx_bdim_x())", terms()));
    visit("acc", merge(r_, kept, e_.decompose(r_.reduced, "k")));
    e_.close();
    const std::string total =
        e_.local("float", r_.op->kind == OpKind::ReduceMax ? "bx_block_max(acc, red)" : "bx_block_sum(acc, red)");
    e_.open("if (bx_tid_x() == 0)");
    finish(total, kept);
    e_.close();
    e_.close();
  }

  void emit_outer() {
    e_.line("BX_SHARED(float, part, 8 * 33);");
    e_.open(fmt::format("for (bx_i64 o0 = (bx_i64)bx_bid_x() * 32; o0 < {}; o0 += (bx_i64)bx_gdim_x() * 32)", outputs()));
    e_.line("const bx_i64 o = o0 + bx_tid_x();");
    e_.line(fmt::format("float acc = {};", r_.init));
    e_.open(fmt::format("if (o < {})", outputs()));
    {
      const Coords kept = e_.decompose(r_.kept, "o");
      e_.open(fmt::format("for (bx_i64 k = bx_tid_y(); k < {}; k += 8)", terms()));
      visit("acc", merge(r_, kept, e_.decompose(r_.reduced, "k")));
      e_.close();
    }
    e_.close();
    e_.line("part[bx_tid_y() * 33 + bx_tid_x()] = acc;");
    e_.line("bx_sync();");
    e_.open(fmt::format("if (bx_tid_y() == 0 && o < {})", outputs()));
    {
      e_.line(fmt::format("float total = {};", r_.init));
      e_.line(fmt::format("for (int y = 0; y < 8; ++y) total = {};",
                          fmt::format(fmt::runtime(r_.combine), "total", "part[y * 33 + bx_tid_x()]")));
      finish("total", e_.decompose(r_.kept, "o"));
    }
    e_.close();
    e_.line("bx_sync();");
    e_.close();
  }

  const KernelInput& in_;
  Emitter& e_;
  Reduction r_;
  std::vector<size_t> final_, visited_;
  bool inner_ = true;
};

}  // namespace

KernelSpec render_reduction(const KernelInput& in) {
  Emitter e(in.body, input_names(in));
  ReductionKernel r(in, e);
  r.emit();
  KernelSpec k;
  k.params = buffer_params(in);
  k.source = kernel_text(k.params, e.take());
  if (r.inner()) {
    k.block = {threads_for(r.terms())};
    k.grid = {static_cast<int>(std::clamp<int64_t>(r.outputs(), 1, 4096))};
  } else {
    k.block = {32, 8};
    k.grid = {static_cast<int>(std::clamp<int64_t>((r.outputs() + 31) / 32, 1, 4096))};
  }
  k.cooperative = true;
  return k;
}

}  // namespace bertc::codegen
