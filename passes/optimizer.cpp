// Builds the optimizer graph: average, measure, clip, update, clear.
#include "passes/optimizer.h"

#include <numeric>

#include <fmt/format.h>

#include "frontend/builder.h"

namespace bertc::passes {

using frontend::Builder;
using frontend::Tensor;

bool exempt_from_weight_decay(const std::string& name) {
  for (const char* part : {"bias", "LayerNorm", "layer_norm"})
    if (name.find(part) != std::string::npos) return true;
  return false;
}

namespace {

Tensor sum_of_squares(Builder& b, Tensor g) {
  std::vector<int64_t> axes(g.rank());
  std::iota(axes.begin(), axes.end(), 0);
  return axes.empty() ? g * g : b.reduce_sum(g * g, axes);
}

}  // namespace

ir::Graph build_optimizer_graph(const ir::Graph& step_graph, const OptimizerOptions& o) {
  if (o.kind != "adamw" && o.kind != "lamb")
    throw ir::Error(fmt::format("optimizer '{}' is not one bertc has (adamw, lamb)", o.kind));
  if (o.accumulation_steps < 1) throw ir::Error("optimizer: accumulation_steps must be >= 1");
  Builder b(step_graph.name() + "_optimizer");
  Tensor lr = b.input("learning_rate", ir::DType::F32, {});
  Tensor step = b.input("step", ir::DType::I64, {});

  struct Slot {
    std::string name;
    Tensor param, acc, grad;
  };
  std::vector<Slot> slots;
  Tensor total_sq;
  for (ir::ValueId p : step_graph.values_of(ir::OpKind::Param)) {
    const ir::Value& v = step_graph.value(p);
    if (!step_graph.find(v.name + ".grad_acc"))
      throw ir::Error(fmt::format("optimizer: param %{} has no gradient accumulator; run accumulate first", v.name));
    Slot s{v.name, b.param(v.name, v.type.shape, v.type.dtype), b.state(v.name + ".grad_acc", v.type), {}};
    s.grad = o.accumulation_steps == 1 ? s.acc : s.acc * (1.0 / static_cast<double>(o.accumulation_steps));
    const Tensor sq = sum_of_squares(b, s.grad);
    total_sq = slots.empty() ? sq : total_sq + sq;
    slots.push_back(s);
  }
  if (slots.empty()) throw ir::Error("optimizer: the step graph has no params");
  const Tensor norm = b.name(sqrt(total_sq), "grad_norm");
  std::optional<Tensor> clip;
  if (o.max_grad_norm > 0) {
    // torch.nn.utils.clip_grad_norm_'s factor: max_norm / (norm + 1e-6), at most 1.
    clip = b.op(ir::OpKind::Minimum, {b.constant(1.0), b.constant(o.max_grad_norm) / (norm + 1e-6)});
  }
  const ir::OpKind kind = o.kind == "adamw" ? ir::OpKind::Adamw : ir::OpKind::Lamb;
  for (const Slot& s : slots) {
    const ir::TensorType type = s.param.type();
    Tensor m = b.state(s.name + ".exp_avg", type), v = b.state(s.name + ".exp_avg_sq", type);
    Tensor g = clip ? s.grad * *clip : s.grad;
    const double decay = exempt_from_weight_decay(s.name) ? 0.0 : o.weight_decay;
    auto next = b.ops(kind, {s.param, g, m, v, lr, step},
                      {{"beta1", o.beta1}, {"beta2", o.beta2}, {"eps", o.eps}, {"weight_decay", decay}});
    b.update(s.param, next[0]);
    b.update(m, next[1]);
    b.update(v, next[2]);
    b.update(s.acc, b.broadcast(b.constant(0.0, type.dtype), type.shape));
  }
  b.output(norm, "grad_norm");
  return std::move(b).finish();
}

}  // namespace bertc::passes
