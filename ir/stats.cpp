// Counting parameters, ops and FLOPs over a verified graph.
#include "ir/stats.h"

#include <algorithm>

#include "ir/attention_layout.h"

namespace bertc::ir {

int64_t op_flops(const Graph& graph, const Op& op) {
  if (op.kind == OpKind::Fused) {  // the ops of its region
    int64_t sum = 0;
    for (const Op& inner : op.region.graph().ops()) sum += op_flops(op.region.graph(), inner);
    return sum;
  }
  if (kernel_family(op) == KernelFamily::Attention) {
    // Per score: the q.k and p.v products (2 each per head dim) forward; the backward recomputes
    // the scores and forms dv, dp, dq and dk (10); plus softmax and dropout work per score.
    const AttentionLayout n = attention_layout(graph, op);
    const int64_t scores = n.batch * n.heads * n.sq * n.sk;
    return n.backward ? scores * (10 * n.d + 8) : scores * (4 * n.d + 5);
  }
  if (op.kind == OpKind::Matmul) {
    const TensorType& out = graph.value(op.result()).type;
    const Shape& lhs = graph.value(op.operands[0]).type.shape;
    const int64_t k = lhs[lhs.size() - (op.attr<bool>("transpose_a") ? 2 : 1)];
    return 2 * out.numel() * k;
  }
  int64_t largest = 0;
  for (ValueId v : op.operands) largest = std::max(largest, graph.value(v).type.numel());
  for (ValueId v : op.results) largest = std::max(largest, graph.value(v).type.numel());
  return op.info().flops_per_element * largest;
}

GraphStats graph_stats(const Graph& graph) {
  GraphStats s;
  for (const Op& op : graph.ops()) {
    ++s.ops;
    ++s.ops_by_kind[std::string(op.info().name)];
    if (op.results.empty()) continue;  // an effect (update): no FLOPs, no tensor of its own
    const TensorType& t = graph.value(op.results[0]).type;
    if (op.kind == OpKind::Param) {
      ++s.parameter_tensors;
      s.parameters += t.numel();
      s.parameter_bytes += t.bytes();
    } else if (op.kind == OpKind::Input) {
      s.input_bytes += t.bytes();
    }
    (op.kind == OpKind::Matmul ? s.matmul_flops : s.other_flops) += op_flops(graph, op);
  }
  return s;
}

}  // namespace bertc::ir
