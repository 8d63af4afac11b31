// Setting the cost model's figures on fused ops (see annotate_costs.h).
#include "passes/annotate_costs.h"

#include <cmath>

#include "passes/cost_model.h"

namespace bertc::passes {

void annotate_costs(ir::Graph& graph, const std::optional<GpuSpec>& gpu, Precision precision) {
  for (ir::OpId i = 0; i < graph.ops().size(); ++i) {
    if (graph.op(i).kind != ir::OpKind::Fused) continue;
    const LaunchCost c = launch_cost(graph, graph.op(i), gpu, precision);
    graph.set_attr(i, "flops", c.flops);
    graph.set_attr(i, "bytes", c.bytes);
    // Rounded to 0.01 us: the estimate means no more, and the IR text stays short.
    graph.set_attr(i, "time_us", std::round(c.seconds * 1e8) / 100.0);
  }
}

}  // namespace bertc::passes
