// Rebuilding a graph op by op into a Builder, for passes that change some ops and copy the rest.
#pragma once

#include <unordered_map>
#include <vector>

#include "ir/builder.h"
#include "ir/graph.h"

namespace bertc::passes {

class GraphCopy {
 public:
  // Costs nothing up front: a region copy of a few ops out of a graph of millions (fusion makes
  // one per kernel) must not pay for the whole graph.
  GraphCopy(const ir::Graph& from, ir::Builder& to) : from_(from), to_(to) {}

  const ir::Graph& source() const { return from_; }

  // The copy of value v of the source graph (copied or mapped before).
  ir::Tensor operator[](ir::ValueId v) const;
  // Declares that value v of the source is now `t` (a replacement).
  void map(ir::ValueId v, ir::Tensor t) { map_.insert_or_assign(v, t); }
  // The copies of an op's operands, in order.
  std::vector<ir::Tensor> operands(const ir::Op& op) const;
  // Copies op unchanged (operands mapped, names kept unless keep_names is false) and maps its results.
  void copy(const ir::Op& op, bool keep_names = true);
  // Marks the source graph's outputs as the new graph's, under the same names.
  void copy_outputs();

 private:
  const ir::Graph& from_;
  ir::Builder& to_;
  std::unordered_map<ir::ValueId, ir::Tensor> map_;
};

}  // namespace bertc::passes
