// One evaluation function per op kind, declared from ops.def: eval_<Id>(OpEval<T>&). The
// executor dispatches to them; each file of this folder implements one family.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/host_tensor.h"

namespace bertc::reference {

using ir::Environment;
using ir::HostTensor;

// A failure while evaluating (a label out of range, a missing input, ...).
class EvalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <typename T>
struct OpEval {
  const ir::Graph& graph;
  const ir::Op& op;
  std::vector<const HostTensor<T>*> in;  // one per operand
  std::vector<HostTensor<T>>& out;       // one per result, zero-filled with the result types
  Environment<T>& env;                   // sources read from it
  std::vector<std::pair<std::string, HostTensor<T>>>& updates;  // applied after the whole graph

  const std::vector<T>& real(size_t i) const { return in[i]->real; }
  const std::vector<int64_t>& integer(size_t i) const { return in[i]->integer; }
  const ir::Shape& shape(size_t i) const { return in[i]->type.shape; }
  template <typename A>
  const A& attr(std::string_view name) const {
    return op.attr<A>(name);
  }
};

// Explicit instantiations for the two compute precisions, in the file defining eval_<Id>.
#define BERTC_INSTANTIATE_EVAL(fn)                 \
  template void fn<float>(OpEval<float>&); \
  template void fn<double>(OpEval<double>&);

#define BERTC_OP(id, ...)    \
  template <typename T>      \
  void eval_##id(OpEval<T>& e);
#include "ir/ops.def"
#undef BERTC_OP

}  // namespace bertc::reference
