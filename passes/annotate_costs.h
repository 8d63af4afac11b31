// The cost annotation: each fused op of the graph gets the cost model's figures as attributes,
// so that a dump shows where the time of a step should go.
//
// Pre:  a verified graph (fused ops after fusion; without them there is nothing to annotate).
// Post: every fused op's flops and bytes (read and written once each) and, for a GPU of the
//       datasheet table, time_us (roofline: max(FLOPs / peak, bytes / bandwidth) + 1 us, rounded
//       to 0.01 us) are set from passes/cost_model.h under `precision`; nothing else changes.
// Order: any time after fusion; the compile report annotates the final graphs. bertc-opt runs it
//        as annotate-costs{arch=h200 precision=bf16}.
#pragma once

#include <optional>

#include "ir/graph.h"
#include "passes/options.h"
#include "passes/targets.h"

namespace bertc::passes {

void annotate_costs(ir::Graph& graph, const std::optional<GpuSpec>& gpu, Precision precision);

}  // namespace bertc::passes
