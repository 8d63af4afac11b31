// Counting parameters, ops and FLOPs over a verified graph.
#include "ir/stats.h"

#include <algorithm>

#include "ir/attention_layout.h"

namespace bertc::ir {

int64_t attention_product_flops(const Graph& graph, const Op& op) {
  // Per score: the q.k and p.v products (2 each per head dim) forward. Backward, as bertc's
  // kernels form it without atomics (codegen/prelude/bx_matrix.h): the key tiles' blocks recompute
  // the scores and dp and form dv and dk, the query tiles' blocks recompute the scores and dp
  // again and form dq: 7 products (14), where an algorithm adding dq atomically needs 5 (10); the
  // PTX emulator's count of the mma's FLOPs holds the two equal (ptx_emulation_test). With blocks
  // (rows of several examples) the whole square is counted: the kernels compute less, as the
  // data's examples allow (passes::counted_flops counts them at the share the data leaves).
  const std::string what = fmt::format("the FLOPs of {}", op.info().name);
  const AttentionLayout n = attention_layout(graph, op);
  const int64_t scores =
      checked_product(checked_product(checked_product(n.batch, n.heads, what), n.sq, what), n.sk, what);
  return checked_product(scores, checked_product(n.backward ? 14 : 4, n.d, what), what);
}

int64_t op_flops(const Graph& graph, const Op& op) {
  // (sizes up to 2^52 elements each: a product of two wrapped, 2^79 FLOPs printed as 0 + the rest)
  const std::string what = fmt::format("the FLOPs of {}", op.info().name);
  if (op.kind == OpKind::Fused) {  // the ops of its region
    int64_t sum = 0;
    for (const Op& inner : op.region.graph().ops()) sum = checked_sum(sum, op_flops(op.region.graph(), inner), what);
    return sum;
  }
  if (kernel_family(op) == KernelFamily::Attention) {
    // (plus softmax and dropout work per score: 5 forward, 8 backward)
    const AttentionLayout n = attention_layout(graph, op);
    const int64_t scores =
        checked_product(checked_product(checked_product(n.batch, n.heads, what), n.sq, what), n.sk, what);
    return checked_sum(attention_product_flops(graph, op), checked_product(scores, n.backward ? 8 : 5, what), what);
  }
  if (op.kind == OpKind::Matmul) {
    const TensorType& out = graph.value(op.result()).type;
    const Shape& lhs = graph.value(op.operands[0]).type.shape;
    const int64_t k = lhs[lhs.size() - (op.attr<bool>("transpose_a") ? 2 : 1)];
    return checked_product(checked_product(2, out.numel(), what), k, what);
  }
  int64_t largest = 0;
  for (ValueId v : op.operands) largest = std::max(largest, graph.value(v).type.numel());
  for (ValueId v : op.results) largest = std::max(largest, graph.value(v).type.numel());
  return checked_product(op.info().flops_per_element, largest, what);
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
      s.parameters = checked_sum(s.parameters, t.numel(), "the graph's parameters");
      s.parameter_bytes = checked_sum(s.parameter_bytes, t.bytes(), "the graph's parameter bytes");
    } else if (op.kind == OpKind::Input) {
      s.input_bytes = checked_sum(s.input_bytes, t.bytes(), "the graph's input bytes");
    }
    int64_t& flops = op.kind == OpKind::Matmul ? s.matmul_flops : s.other_flops;
    flops = checked_sum(flops, op_flops(graph, op), "the graph's FLOPs");
  }
  return s;
}

}  // namespace bertc::ir
