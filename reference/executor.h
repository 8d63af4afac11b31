// The reference executor: evaluates an ir::Graph op by op on the CPU, in float or in double.
// It is the numerical oracle of every pass and kernel: simple loops, BLAS for matrix products,
// deterministic, and dropout masks drawn exactly as ir/philox.h defines them.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/host_tensor.h"
#include "reference/kernels.h"

namespace bertc::reference {

using ir::Environment;
using ir::HostTensor;

template <typename T>
struct RunResult {
  std::vector<HostTensor<T>> outputs;           // in the graph's output order
  std::map<std::string, HostTensor<T>> fetched;  // named values asked for
};

template <typename T>
class Executor {
 public:
  explicit Executor(const ir::Graph& graph);

  // Reads inputs, params and states from `env` by name (types must match the IR), evaluates every
  // op, then writes update ops' values back into `env`. `fetch` names extra values to return.
  // Throws EvalError naming the op on bad data.
  // With `all` given, it receives every value of the graph, indexed by ValueId (nothing is freed):
  // what kernel tests compare each kernel's outputs with.
  RunResult<T> run(Environment<T>& env, const std::vector<std::string>& fetch = {},
                   std::vector<HostTensor<T>>* all = nullptr) const;
  // The same, calling `after_op(i, values)` after op i with the values so far, by ValueId (those
  // no longer read are freed): a caller may change them in place (the data-parallel sums of
  // gradients as soon as the backward has computed them).
  using AfterOp = std::function<void(size_t, std::vector<HostTensor<T>>&)>;
  RunResult<T> run(Environment<T>& env, const std::vector<std::string>& fetch, const AfterOp& after_op) const;

 private:
  RunResult<T> run_all(Environment<T>& env, const std::vector<std::string>& fetch, std::vector<HostTensor<T>>* all,
                       const AfterOp* after_op) const;

  const ir::Graph& graph_;
  std::vector<size_t> last_use_;  // per value: index of the last op reading it
};

extern template class Executor<float>;
extern template class Executor<double>;

}  // namespace bertc::reference
