// Which rank updates which param under ZeRO stage 1 (see optimizer_shards.h).
#include "passes/optimizer_shards.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>

#include "ir/value_names.h"

namespace bertc::passes {

std::vector<int> shard_owners(const std::vector<int64_t>& elements, int shards) {
  if (shards < 1) throw std::invalid_argument("shard_owners: shards must be >= 1");
  std::vector<size_t> order(elements.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // (stable: equal sizes keep their order, so the split is the same on every rank)
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return elements[a] > elements[b]; });
  std::vector<int64_t> load(static_cast<size_t>(shards), 0);
  std::vector<int> owner(elements.size(), 0);
  for (size_t i : order) {
    const auto least = std::min_element(load.begin(), load.end());
    owner[i] = static_cast<int>(least - load.begin());
    *least += elements[i];
  }
  return owner;
}

std::vector<int> param_owners(const ir::Graph& step, int shards) {
  std::vector<int64_t> elements;
  for (ir::ValueId p : step.values_of(ir::OpKind::Param)) elements.push_back(step.value(p).type.numel());
  return shard_owners(elements, shards);
}

std::map<std::string, size_t> state_params(const ir::Graph& step, const ir::Graph& optimizer) {
  const std::vector<ir::ValueId> params = step.values_of(ir::OpKind::Param);
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < params.size(); ++i) index[step.value(params[i]).name] = i;
  std::map<std::string, size_t> out;
  for (ir::ValueId v : optimizer.values_of(ir::OpKind::State)) {
    const std::string& name = optimizer.value(v).name;
    const size_t dot = name.rfind('.');
    if (name.ends_with(ir::names::kGradAccumulatorSuffix) || dot == std::string::npos) continue;
    if (const auto it = index.find(name.substr(0, dot)); it != index.end()) out[name] = it->second;
  }
  return out;
}

std::map<std::string, int> state_owners(const ir::Graph& step, const ir::Graph& optimizer, int shards) {
  const std::vector<int> owners = param_owners(step, shards);
  std::map<std::string, int> out;
  for (const auto& [name, param] : state_params(step, optimizer)) out[name] = owners[param];
  return out;
}

}  // namespace bertc::passes
