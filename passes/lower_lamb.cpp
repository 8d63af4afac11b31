// LAMB as reductions and elementwise ops (see lower_lamb.h).
#include "passes/lower_lamb.h"

#include <cmath>

#include "ir/builder.h"
#include "passes/graph_copy.h"
#include "passes/optimizer.h"

namespace bertc::passes {
namespace {

using ir::Tensor;

struct LambResults {
  Tensor param, m, v;
};

LambResults lowered(ir::Builder& b, const std::vector<Tensor>& in, const ir::Op& op) {
  const Tensor &p = in[0], &g = in[1], &m = in[2], &v = in[3], &lr = in[4], &step = in[5];
  const double b1 = op.attr<double>("beta1"), b2 = op.attr<double>("beta2"), eps = op.attr<double>("eps"),
               wd = op.attr<double>("weight_decay");
  const Tensor count = b.cast(step, ir::DType::F32);
  // The bias corrections 1 - beta^t as -(e^(t ln beta) - 1): in float, 1 - e^(t ln beta) keeps
  // only the digits e^ gets right past 1 - beta^t's leading ones (at beta2 = 0.999 and t = 1, an
  // exp within its 2 ulp leaves 1 - beta2 wrong by 1e-4 relative: 1000 times the exp's error);
  // expm1 keeps float's precision. (ln beta in double, once, here.)
  const Tensor inv_c1 = b.constant(-1.0) / expm1(count * std::log(b1));
  Tensor inv_c2 = b.constant(-1.0) / expm1(count * std::log(b2));
  Tensor m1 = m * b1 + g * (1 - b1);
  Tensor v1 = v * b2 + g * g * (1 - b2);
  // 1-bit LAMB past freeze_step: exp_avg is the step's momentum, exp_avg_sq is kept, bias-corrected
  // as at freeze_step (ir/ops.def). (step - freeze_step > 0 exactly when past it: whole numbers.)
  if (const double freeze = op.attr<double>("freeze_step"); freeze > 0) {
    const Tensor past = b.op(ir::OpKind::Maximum, {count - b.constant(freeze), b.constant(0.0)});
    m1 = b.op(ir::OpKind::Where, {past, m, m1});
    v1 = b.op(ir::OpKind::Where, {past, v, v1});
    inv_c2 = b.op(ir::OpKind::Where, {past, b.constant(-1.0 / std::expm1(freeze * std::log(b2))), inv_c2});
  }
  auto direction = [&] {
    const Tensor adam = (m1 * inv_c1) / (sqrt(v1 * inv_c2) + eps);
    return wd != 0 ? adam + p * wd : adam;
  };
  const Tensor p_sq = sum_of_squares(b, p), u_sq = sum_of_squares(b, direction());
  // Both sums are >= 0: their minimum is nonzero exactly when neither is zero.
  const Tensor both = b.op(ir::OpKind::Minimum, {p_sq, u_sq});
  const Tensor trust = b.op(ir::OpKind::Where, {both, sqrt(p_sq) / sqrt(u_sq), b.constant(1.0)});
  return {p - direction() * (lr * trust), m1, v1};
}

}  // namespace

size_t lower_lamb(ir::Graph& graph) {
  size_t found = 0;
  for (const ir::Op& op : graph.ops()) found += op.kind == ir::OpKind::Lamb;
  if (!found) return 0;
  ir::Builder b(graph.name());
  GraphCopy copy(graph, b);
  for (const ir::Op& op : graph.ops()) {
    if (op.kind != ir::OpKind::Lamb) {
      copy.copy(op);
      continue;
    }
    ir::Builder::OpScope scope(b, op.scope);
    const LambResults r = lowered(b, copy.operands(op), op);
    const Tensor results[] = {r.param, r.m, r.v};
    for (size_t k = 0; k < 3; ++k) {
      copy.map(op.results[k], results[k]);
      if (!graph.value(op.results[k]).name.empty()) b.name(results[k], graph.value(op.results[k]).name);
    }
  }
  copy.copy_outputs();
  graph = std::move(b).finish();
  return found;
}

}  // namespace bertc::passes
