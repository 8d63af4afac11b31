// A value-by-value check of a compiled graph on a device against the reference executor: every
// launch's results are kept to the end of the plan and brought back, and compared in op order
// with the reference's, so that the first value beyond tolerance names the kernel that went
// wrong (`bertc check`; on a new GPU, what finds a bad kernel that a loss alone only hints at).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "codegen/matrix_strategy.h"
#include "ir/graph.h"
#include "runtime/device.h"
#include "ir/host_tensor.h"

namespace bertc::train {

// The error of `got` against `want`: the largest difference over the largest magnitude of
// `want`, or over `floor` when that is larger; integers 0 when equal, else infinity; a NaN or
// infinity where `want` is finite is infinity. check_graph sets the floor to a fraction of the
// largest operand of the op, or to the floor of an operand that is itself below its floor (noise)
// when larger (1e-6 at least): a result that cancels to rounding noise of its operands (the key
// projection's bias gradient, mathematically zero: softmax ignores a constant added to a row),
// and what is computed from that noise, is measured against its operands' scale, not its own.
double check_error(const ir::HostTensor<float>& got, const ir::HostTensor<float>& want,
                   double floor = 1e-6);

struct ValueCheck {
  ir::ValueId value = 0;
  std::string what;  // "%name = op (scope)"
  double error = 0;
  // Elements the reference made NaN or infinite: not compared (check_error passes over them), so
  // nothing shows the device right or wrong there.
  size_t not_finite = 0;
};

struct GraphCheck {
  std::vector<ValueCheck> values;  // every launched op's results, in op order
  // The first value beyond `tolerance`, or values.size() when none is.
  size_t first_beyond(double tolerance) const;
};

// Runs `graph` on `device` (kernels rendered for `target`) and on the reference executor from
// copies of `env`, and compares every value a launch produces, each with the floor
// `operand_fraction` x its op's largest reference operand.
GraphCheck check_graph(const ir::Graph& graph, const codegen::RenderTarget& target, runtime::Device& device,
                       const ir::Environment<float>& env, double operand_fraction);
// The same with the kernels given: `kernels_for(kept)` returns the launches of `kept` (the graph
// with every checked value an output), e.g. a compiled program's with the arena of `kept`.
using KernelsFor = std::function<codegen::GraphKernels(const ir::Graph& kept)>;
GraphCheck check_graph(const ir::Graph& graph, const KernelsFor& kernels_for, runtime::Device& device,
                       const ir::Environment<float>& env, double operand_fraction);

}  // namespace bertc::train
