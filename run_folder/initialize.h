// Fresh parameters, as Hugging Face's BertPreTrainedModel._init_weights makes them.
#pragma once

#include <cstdint>

#include "ir/graph.h"
#include "support/tensor_io.h"

namespace bertc::run_folder {

// Sets every param of `graph` that `env` lacks: biases 0; layer-norm weights 1; other weights and
// embeddings N(0, stddev), drawn from Philox keyed by seed and the param's name (XXH64), so the
// same seed gives the same model anywhere, whatever order the graph lists params in; and row pad_token_id of the word embeddings 0 (nn.Embedding's padding_idx).
void initialize_parameters(const ir::Graph& graph, double stddev, int64_t pad_token_id, uint64_t seed,
                           support::Environment& env);

// Sets every state of `graph` that `env` lacks to its init value (zeros for optimizer moments and
// accumulators, 2^16 for the loss scale).
void initialize_states(const ir::Graph& graph, support::Environment& env);

}  // namespace bertc::run_folder
