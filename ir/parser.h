// Reads the IR text form written by printer.h back into a Graph.
#pragma once

#include <string_view>

#include "ir/graph.h"

namespace bertc::ir {

// Parses one graph. Throws ir::Error with the line and column of the first problem. The
// result is not verified: run verify() (verifier.h) before trusting types.
Graph parse(std::string_view text);

}  // namespace bertc::ir
