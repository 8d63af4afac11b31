// Comparing a device's values with the reference's (see step_check.h).
#include "train/step_check.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "codegen/render.h"
#include "runtime/plan_executor.h"
#include "reference/executor.h"

namespace bertc::train {
namespace {

// "%name f16[8,2,128,64] = fused[matmul] result 0 of 3 (scope)": unnamed values are
// numbered by ValueId, which IR dumps renumber, so the type, kernel and scope say which it is.
std::string describe(const ir::Graph& g, ir::ValueId v) {
  const ir::Op& op = g.producer(v);
  const std::string& name = g.value(v).name;
  std::string kind(op.info().name);
  if (op.kind == ir::OpKind::Fused) kind += "[" + op.attr<std::string>("kernel") + "]";
  if (op.results.size() > 1) {
    const auto at = std::find(op.results.begin(), op.results.end(), v) - op.results.begin();
    kind += fmt::format(" result {} of {}", at, op.results.size());
  }
  return fmt::format("{} {} = {}{}", name.empty() ? fmt::format("%{}", v) : "%" + name, ir::to_string(g.value(v).type),
                     kind, op.scope.empty() ? "" : " (" + op.scope + ")");
}

}  // namespace

double check_error(const ir::HostTensor<float>& got, const ir::HostTensor<float>& want, double floor) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (got.type != want.type) return kInf;
  if (!want.is_real()) return got.integer == want.integer ? 0 : kInf;
  double largest = floor, worst = 0;
  for (float w : want.real) largest = std::max(largest, std::abs(double(w)));
  for (size_t i = 0; i < want.real.size(); ++i) {
    const double w = want.real[i], g = got.real[i];
    if (std::isfinite(w) && !std::isfinite(g)) return kInf;
    if (std::isfinite(w)) worst = std::max(worst, std::abs(g - w));
  }
  return worst / largest;
}

size_t GraphCheck::first_beyond(double tolerance) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (!(values[i].error <= tolerance)) return i;
  return values.size();
}

GraphCheck check_graph(const ir::Graph& graph, const codegen::RenderTarget& target, runtime::Device& device,
                       const ir::Environment<float>& env, double operand_fraction) {
  return check_graph(graph, [&](const ir::Graph& kept) { return codegen::render_graph(kept, target); }, device, env,
                     operand_fraction);
}

GraphCheck check_graph(const ir::Graph& graph, const KernelsFor& kernels_for, runtime::Device& device,
                       const ir::Environment<float>& env, double operand_fraction) {
  std::vector<ir::ValueId> checked;
  for (const ir::Op& op : graph.ops())
    if (ir::launches_kernel(op.kind))
      for (ir::ValueId v : op.results) checked.push_back(v);
  // Every checked value becomes an output, so that the memory plan keeps it to the end.
  ir::Graph kept = graph;
  for (ir::ValueId v : checked) kept.add_output(v);
  ir::Environment<float> on_device = env, on_reference = env;
  runtime::PlanExecutor executor(kept, kernels_for(kept), device);
  const std::vector<ir::HostTensor<float>> got = executor.run(on_device);
  std::vector<ir::HostTensor<float>> want;
  reference::Executor<float>(graph).run(on_reference, {}, &want);
  // Each value's floor: the fraction of its op's largest operand; and where an operand is itself
  // below its own floor (rounding noise), that floor too, so that noise carries its scale along
  // (the key bias's gradient, noise of the 96-wide sum it is sliced from, then added to a zero
  // accumulator: measured against its own noise the sum was "off" by 4 in fp16). Values above
  // their floor pass on nothing: a small but real gradient is still measured at its own scale.
  std::vector<double> floor(graph.num_values(), 0);
  for (const ir::Op& op : graph.ops()) {
    double f = 0;
    for (ir::ValueId o : op.operands) {
      double largest = 0;
      for (float x : want.at(o).real) largest = std::max(largest, std::abs(double(x)));
      f = std::max(f, operand_fraction * largest);
      if (largest <= floor[o]) f = std::max(f, floor[o]);
    }
    for (ir::ValueId r : op.results) floor[r] = f;
  }
  GraphCheck result;
  const size_t first = graph.outputs().size();
  for (size_t i = 0; i < checked.size(); ++i) {
    const ir::HostTensor<float>& reference = want.at(checked[i]);
    result.values.push_back({checked[i], describe(graph, checked[i]),
                             check_error(got.at(first + i), reference, std::max(1e-6, floor[checked[i]])),
                             static_cast<size_t>(std::count_if(reference.real.begin(), reference.real.end(),
                                                               [](float w) { return !std::isfinite(w); }))});
  }
  return result;
}

}  // namespace bertc::train
