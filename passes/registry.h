// The pass registry: name -> function, used by bertc-opt --passes=a,b and by the pipeline.
#pragma once

#include <span>
#include <string_view>

#include "ir/graph.h"

namespace bertc::passes {

struct PassInfo {
  std::string_view name;
  std::string_view summary;
  void (*run)(ir::Graph& graph);
};

std::span<const PassInfo> registered_passes();
// nullptr when no pass has that name.
const PassInfo* find_pass(std::string_view name);

}  // namespace bertc::passes
