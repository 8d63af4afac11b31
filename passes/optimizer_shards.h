// ZeRO stage 1's split of the optimizer step: which rank updates each param (and holds its
// optimizer state), whole tensors, so that every optimizer — LAMB's per-tensor trust ratio
// included — runs on a shard as it runs on the whole model.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace bertc::passes {

// The owner (0 .. shards-1) of each of `elements` (tensor sizes, in any fixed order): the largest
// tensor first, each to the shard holding the fewest elements so far (the lowest-numbered of
// equals), so that no shard holds more than the mean plus the largest tensor. Depends on the
// sizes and their order alone: every rank computes the same split. Throws std::invalid_argument
// for shards < 1.
std::vector<int> shard_owners(const std::vector<int64_t>& elements, int shards);

// shard_owners of the step graph's params, in values_of(Param) order.
std::vector<int> param_owners(const ir::Graph& step, int shards);

// The optimizer graph's per-param states (named "<param>.<state>": exp_avg, exp_avg_sq, ...; not
// the gradient accumulators, which every rank keeps), each with the index of its param in the step
// graph's values_of(Param).
std::map<std::string, size_t> state_params(const ir::Graph& step, const ir::Graph& optimizer);

// state_params with each state's shard (its param's) when `optimizer` (the whole model's) is split
// over `shards`.
std::map<std::string, int> state_owners(const ir::Graph& step, const ir::Graph& optimizer, int shards);

}  // namespace bertc::passes
