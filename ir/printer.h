// The IR text form (MLIR-like), which parser.h reads back exactly:
//
//   graph @bert_tiny {
//     %input_ids = input : i32[8,128]
//     %0 = gather(%bert.embeddings.word_embeddings.weight, %input_ids) : f32[8,128,128]
//     %12 = layer_norm(%11, %w, %b) {eps = 1e-12} : f32[8,128,128]
//     update(%w, %13)
//     return %loss
//   }
//
// Named values print as %name, unnamed ones as %N numbered in definition order. Attributes
// equal to their default are left out. Ops without results (effects) have no "=" and no types.
#pragma once

#include <ostream>
#include <string>

#include "ir/graph.h"

namespace bertc::ir {

std::string print(const Graph& graph);
void print(const Graph& graph, std::ostream& out);

// How values print in this graph ("%name" or "%N"), indexed by ValueId.
std::vector<std::string> value_labels(const Graph& graph);

}  // namespace bertc::ir
