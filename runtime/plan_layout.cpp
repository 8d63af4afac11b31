// Resolving each value's storage from the memory plan (see plan_layout.h).
#include "runtime/plan_layout.h"

#include <stdexcept>

#include <fmt/format.h>

namespace bertc::runtime {

using ir::OpKind;

PlanLayout::PlanLayout(const ir::Graph& graph, codegen::ArenaLayout arena)
    : arena_(std::move(arena)),
      place_(graph.num_values()),
      has_place_(graph.num_values(), false) {
  if (arena_.offset_of.size() != graph.num_values())
    throw std::logic_error(fmt::format("the arena layout places {} values, the graph has {}: render the graph again "
                                       "after changing it",
                                       arena_.offset_of.size(), graph.num_values()));
  // In op order, so a reshape's operand and an update's target are resolved before they are needed.
  for (const ir::Op& op : graph.ops()) {
    for (ir::ValueId r : op.results) {
      if (ir::is_source(op.kind)) {
        owned_.push_back(r);
        place_[r] = {ValuePlace::Own, 0, r};
      } else if (arena_.offset_of[r] >= 0) {
        place_[r] = {ValuePlace::Arena, arena_.offset_of[r], 0};
      } else if (ir::is_view(op.kind) && has_place_[op.operands[0]]) {
        place_[r] = place_[op.operands[0]];
      } else {
        continue;  // a next value written into its param or state: placed at its update below
      }
      has_place_[r] = true;
    }
  }
  // Next values outside the arena live in their target (and their producers write them there);
  // reshapes of them follow. Repeat until nothing changes: chains are short.
  for (bool changed = true; changed;) {
    changed = false;
    for (const ir::Op& op : graph.ops()) {
      if (op.kind == OpKind::Update && !has_place_[op.operands[1]] && has_place_[op.operands[0]]) {
        place_[op.operands[1]] = place_[op.operands[0]];
        has_place_[op.operands[1]] = true;
        changed = true;
      }
      if (ir::is_view(op.kind) && !has_place_[op.result()] && has_place_[op.operands[0]]) {
        place_[op.result()] = place_[op.operands[0]];
        has_place_[op.result()] = true;
        changed = true;
      }
    }
  }
}

ValuePlace PlanLayout::place(ir::ValueId v) const {
  if (v >= has_place_.size() || !has_place_[v])
    throw std::logic_error(fmt::format("the memory plan gives value %{} no storage", v));
  return place_[v];
}

}  // namespace bertc::runtime
