// Static figures of a graph: parameter count, ops by kind, FLOPs.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ir/graph.h"

namespace bertc::ir {

// FLOPs of one op: 2*M*N*K per matrix product; a fused op's region op by op; otherwise
// ops.def's flops_per_element times the element count of the op's largest tensor (a
// transcendental counts as one FLOP).
int64_t op_flops(const Graph& graph, const Op& op);
// The FLOPs of an attention op's products alone (q.k and p.v forward; backward, the scores and dp
// each formed twice, and dv, dk and dq, as bertc's kernels compute them: 4 and 14 per score per
// head dimension): what a tensor core computes of it, the softmax's work aside.
int64_t attention_product_flops(const Graph& graph, const Op& op);

struct GraphStats {
  int64_t ops = 0;
  int64_t parameters = 0;        // elements of all param values
  int64_t parameter_bytes = 0;
  int64_t parameter_tensors = 0;
  int64_t input_bytes = 0;       // one batch of data inputs
  int64_t matmul_flops = 0;
  int64_t other_flops = 0;
  std::map<std::string, int64_t> ops_by_kind;  // op name -> count, sorted by name
  int64_t flops() const { return matmul_flops + other_flops; }
};

GraphStats graph_stats(const Graph& graph);

}  // namespace bertc::ir
