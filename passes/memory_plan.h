// Memory planning: the lifetime of every per-step buffer over the op order, and offsets for all
// of them in one arena (256-byte aligned, reused once a buffer is dead, reshape and suitable
// pointwise ops in place). Params, optimizer state and data inputs are laid out apart, and a
// param's or state's next value is written in place when nothing reads the old one afterwards.
//
// Pre:  a verified graph in its final op order (after schedule).
// Post: an analysis; the graph is not changed. `bertc-opt --passes=memory-plan` prints it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace bertc::passes {

inline constexpr int64_t kArenaAlignment = 256;

struct Buffer {
  std::vector<ir::ValueId> values;  // the values sharing it (an op and its in-place results)
  int64_t bytes = 0;                // aligned
  size_t first = 0, last = 0;       // ops (by index) from its definition to its last use
  int64_t offset = 0;               // in the arena
};

struct MemoryPlan {
  int64_t arena_bytes = 0;       // planned peak of per-step buffers (activations, gradients, temporaries)
  int64_t live_peak_bytes = 0;   // the most bytes live at once: what no placement can beat
  int64_t param_bytes = 0;
  int64_t state_bytes = 0;       // optimizer moments, gradient accumulators, loss scale
  int64_t input_bytes = 0;       // one batch
  size_t peak_op = 0;            // where live_peak_bytes is reached
  std::vector<Buffer> buffers;
  // Per value; -1: not in the arena (sources, next values written into their param or state,
  // and reshapes of those, which are views).
  std::vector<int64_t> offset_of;

  int64_t total_bytes() const { return arena_bytes + param_bytes + state_bytes + input_bytes; }
};

MemoryPlan plan_memory(const ir::Graph& graph);

// "arena 412.5 MiB (live peak 398.0 MiB at op 1234), params 420.0 MiB, ..." for logs and tests.
std::string describe(const MemoryPlan& plan);

}  // namespace bertc::passes
