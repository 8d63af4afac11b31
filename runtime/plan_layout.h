// Where every value of a compiled graph lives at run time, as the memory plan decided: per-step
// values in one arena at their planned offsets; inputs, params, states and constants in buffers
// of their own; a reshape on its operand's bytes; a param's or state's next value, when the plan
// writes it in place, on the param or state itself. Device-independent: the host runner and the
// GPU runtime both bind kernel arguments through it.
#pragma once

#include <cstdint>
#include <vector>

#include "codegen/kernel.h"
#include "ir/graph.h"

namespace bertc::runtime {

struct ValuePlace {
  enum Kind { Arena, Own } kind = Arena;
  int64_t offset = 0;     // Arena: bytes into the arena
  ir::ValueId owner = 0;  // Own: the source value whose buffer it is
};

class PlanLayout {
 public:
  // `arena`: where the memory plan puts graph's per-step values (GraphKernels::arena).
  PlanLayout(const ir::Graph& graph, codegen::ArenaLayout arena);

  const codegen::ArenaLayout& arena() const { return arena_; }
  // The values with a buffer of their own (inputs, params, states, constants), in value order.
  const std::vector<ir::ValueId>& owned() const { return owned_; }
  // Throws std::logic_error naming the value when the plan gives it no storage.
  ValuePlace place(ir::ValueId v) const;

 private:
  codegen::ArenaLayout arena_;
  std::vector<ir::ValueId> owned_;
  std::vector<ValuePlace> place_;
  std::vector<bool> has_place_;
};

}  // namespace bertc::runtime
