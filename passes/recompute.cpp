// Choosing the values to drop (per policy) and rewriting backward uses to recomputed copies.
#include "passes/recompute.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "ir/stats.h"
#include "passes/graph_copy.h"
#include "passes/memory_plan.h"

namespace bertc::passes {
namespace {

using ir::OpKind;

bool is_backward(const ir::Op& op) { return op.scope.starts_with("backward"); }

using ir::is_source;

// The facts every policy needs: where the backward starts, which forward values it reads.
struct StepInfo {
  size_t boundary = 0;              // index of the first backward op
  std::vector<bool> saved;          // forward value read by a backward op
  std::vector<std::vector<size_t>> consumers;
};

StepInfo analyse(const ir::Graph& g) {
  StepInfo s;
  s.boundary = g.ops().size();
  for (size_t i = 0; i < g.ops().size(); ++i)
    if (is_backward(g.ops()[i])) {
      s.boundary = i;
      break;
    }
  s.saved.assign(g.num_values(), false);
  s.consumers.assign(g.num_values(), {});
  for (size_t i = 0; i < g.ops().size(); ++i)
    for (ir::ValueId v : g.ops()[i].operands) {
      s.consumers[v].push_back(i);
      if (i >= s.boundary && g.value(v).producer < s.boundary && !is_source(g.producer(v).kind)) s.saved[v] = true;
    }
  return s;
}

// "bert.encoder.layer.3" for ops of encoder layer 3 (any scope with a ".layer.<n>" part), else "".
std::string layer_of(const std::string& scope) {
  static const std::regex layer(R"(^(.*?\blayer\.\d+)(\.|$))");
  std::smatch m;
  return std::regex_search(scope, m, layer) ? m[1].str() : "";
}

// Selective: a saved value is dropped when it can be made again from kept values through cheap
// ops alone (pointwise, layout, softmax, dropout, layer norm, attention: no weight matmul), or when
// it is a [B,h,S,S] attention matrix; chains through unsaved values are allowed.
std::set<ir::ValueId> choose_selective(const ir::Graph& g, const StepInfo& s) {
  std::vector<bool> recomputable(g.num_values(), false);
  std::set<ir::ValueId> drop;
  for (size_t i = 0; i < s.boundary; ++i) {
    const ir::Op& op = g.ops()[i];
    if (is_source(op.kind)) continue;
    const bool cheap = ir::cheap_to_recompute(op.kind);
    for (ir::ValueId v : op.results) {
      const ir::Shape& shape = g.value(v).type.shape;
      const bool attention_matrix = shape.size() == 4 && shape[2] == shape[3] && shape[2] > 1;
      bool from_kept = cheap || attention_matrix;
      for (ir::ValueId u : op.operands)
        from_kept = from_kept && (is_source(g.producer(u).kind) || s.saved[u] || recomputable[u]);
      recomputable[v] = from_kept;
      if (from_kept && s.saved[v]) drop.insert(v);
    }
  }
  return drop;
}

// The first `count` encoder layers, in forward order.
std::set<std::string> first_layers(const ir::Graph& g, const StepInfo& s, int64_t count) {
  std::vector<std::string> layers;
  for (size_t i = 0; i < s.boundary; ++i) {
    const std::string l = layer_of(g.ops()[i].scope);
    if (!l.empty() && std::find(layers.begin(), layers.end(), l) == layers.end()) layers.push_back(l);
  }
  return {layers.begin(), layers.begin() + std::min<int64_t>(count, layers.size())};
}

std::set<ir::ValueId> choose_full(const ir::Graph& g, const StepInfo& s, const std::set<std::string>& chosen) {
  // Every forward value of a chosen layer that stays in the layer; only those the backward reads,
  // and what they are made from, get recomputed (copies are made on demand).
  std::set<ir::ValueId> drop;
  for (ir::ValueId v = 0; v < g.num_values(); ++v) {
    const ir::Op& op = g.producer(v);
    if (g.value(v).producer >= s.boundary || is_source(op.kind)) continue;
    const std::string l = layer_of(op.scope);
    if (!chosen.count(l)) continue;
    // Keep what another layer (or the heads) reads in the forward: the layer's outputs.
    bool leaves_layer = false;
    for (size_t c : s.consumers[v])
      leaves_layer = leaves_layer || (c < s.boundary && layer_of(g.ops()[c].scope) != l);
    if (!leaves_layer) drop.insert(v);
  }
  return drop;
}

int64_t count_layers(const ir::Graph& g) {
  std::set<std::string> layers;
  for (const ir::Op& op : g.ops())
    if (!is_backward(op) && !layer_of(op.scope).empty()) layers.insert(layer_of(op.scope));
  return static_cast<int64_t>(layers.size());
}

// Rewrites backward uses of dropped values to recomputed copies; returns the recompute FLOPs.
int64_t apply(ir::Graph& g, const StepInfo& s, const std::set<ir::ValueId>& drop) {
  if (drop.empty()) return 0;
  ir::Builder b(g.name());
  GraphCopy copy(g, b);
  std::map<ir::ValueId, ir::Tensor> again;  // recomputed copies, made once
  int64_t flops = 0;
  std::function<ir::Tensor(ir::ValueId)> recomputed = [&](ir::ValueId v) -> ir::Tensor {
    if (auto it = again.find(v); it != again.end()) return it->second;
    const ir::Op& op = g.producer(v);
    std::vector<ir::Tensor> in;
    for (ir::ValueId u : op.operands) in.push_back(drop.count(u) ? recomputed(u) : copy[u]);
    std::vector<ir::TensorType> types;
    for (ir::ValueId r : op.results) types.push_back(g.value(r).type);
    ir::Builder::OpScope scope(b, "recompute/" + op.scope);
    const auto out = b.copy_op(op, in, types);
    flops += ir::op_flops(g, op);
    for (size_t i = 0; i < out.size(); ++i) again.emplace(op.results[i], out[i]);
    return again.at(v);
  };
  for (size_t i = 0; i < g.ops().size(); ++i) {
    const ir::Op& op = g.ops()[i];
    if (i < s.boundary || std::none_of(op.operands.begin(), op.operands.end(), [&](ir::ValueId v) { return drop.count(v) > 0; })) {
      copy.copy(op);
      continue;
    }
    std::vector<ir::Tensor> in;
    for (ir::ValueId u : op.operands) in.push_back(drop.count(u) ? recomputed(u) : copy[u]);
    std::vector<ir::TensorType> types;
    for (ir::ValueId r : op.results) types.push_back(g.value(r).type);
    const auto out = b.copy_op(op, in, types);
    for (size_t k = 0; k < out.size(); ++k) {
      copy.map(op.results[k], out[k]);
      if (!g.value(op.results[k]).name.empty()) b.name(out[k], g.value(op.results[k]).name);
    }
  }
  copy.copy_outputs();
  g = std::move(b).finish();
  return flops;
}

// What a trial applies: auto's candidates are the policies plus their mixture.
enum class Plan { None, Selective, Full, SelectiveAndFull };

Plan plan_of(RecomputePolicy policy) {
  switch (policy) {
    case RecomputePolicy::None: return Plan::None;
    case RecomputePolicy::Selective: return Plan::Selective;
    case RecomputePolicy::Full: return Plan::Full;
    case RecomputePolicy::Auto: break;
  }
  throw std::logic_error("recompute auto is a choice among plans, not a plan");
}

// None, selective, full (on the first `layers` encoder layers), or selective and full (full on
// those layers, selective elsewhere; auto's mixture).
RecomputeResult apply_plan(ir::Graph& g, Plan plan, int64_t layers) {
  const StepInfo s = analyse(g);
  std::set<ir::ValueId> drop;
  const std::set<std::string> chosen = first_layers(g, s, layers);
  if (plan == Plan::Selective || plan == Plan::SelectiveAndFull) drop = choose_selective(g, s);
  if (plan == Plan::SelectiveAndFull) {
    // A fully recomputed layer keeps its outputs: were selective to drop one, the backward of
    // the next layer would recompute the whole chain of dropped layers before it, at once.
    std::erase_if(drop, [&](ir::ValueId v) { return chosen.count(layer_of(g.producer(v).scope)) > 0; });
  }
  if (plan == Plan::Full || plan == Plan::SelectiveAndFull) drop.merge(choose_full(g, s, chosen));
  static constexpr const char* kNames[] = {"none", "selective", "full", "selective+full"};
  RecomputeResult r{kNames[static_cast<int>(plan)], plan == Plan::None || plan == Plan::Selective ? 0 : layers,
                    static_cast<int64_t>(drop.size()), 0};
  r.recompute_flops = apply(g, s, drop);
  return r;
}

struct Trial {
  ir::Graph graph;
  Plan plan;
  RecomputeResult result;
  int64_t arena = 0;
};

Trial trial(const ir::Graph& g, Plan plan, int64_t layers) {
  Trial t{g, plan, {}, 0};
  t.result = apply_plan(t.graph, plan, layers);
  t.arena = plan_memory(t.graph).arena_bytes;
  return t;
}

// The fewest layers k in 1..L for which `plan` on k layers fits, by bisection (activation
// memory falls as k grows); nullopt when not even all L fit. `smallest` gets the least arena seen.
std::optional<Trial> fewest_layers(const ir::Graph& g, Plan plan, int64_t layers, int64_t budget, int64_t& smallest) {
  std::optional<Trial> best;
  int64_t lo = 1, hi = layers;
  while (lo <= hi) {
    const int64_t k = (lo + hi) / 2;
    Trial t = trial(g, plan, k);
    smallest = std::min(smallest, t.arena);
    if (t.arena <= budget) {
      best = std::move(t);
      hi = k - 1;
    } else {
      lo = k + 1;
    }
  }
  return best;
}

}  // namespace

RecomputeResult recompute(ir::Graph& graph, RecomputePolicy policy, int64_t memory_budget) {
  const int64_t layers = count_layers(graph);
  if (policy != RecomputePolicy::Auto) return apply_plan(graph, plan_of(policy), layers);
  if (memory_budget <= 0)
    throw ir::Error("recompute auto needs a memory budget (bytes): [compile] memory_budget, --memory-budget BYTES, or "
                    "recompute{budget=BYTES} in bertc-opt");
  // Of the plans that fit, the one with the fewest recompute FLOPs: none, selective, or full
  // recompute of the fewest layers (alone or with selective on the other layers).
  std::vector<Trial> fitting;
  int64_t smallest = INT64_MAX;
  for (Plan p : {Plan::None, Plan::Selective}) {
    Trial t = trial(graph, p, 0);
    smallest = std::min(smallest, t.arena);
    if (t.arena <= memory_budget) fitting.push_back(std::move(t));
    if (!fitting.empty()) break;  // none costs nothing; selective costs less than any full layer's forward
  }
  if (fitting.empty())
    for (Plan p : {Plan::Full, Plan::SelectiveAndFull})
      if (auto t = fewest_layers(graph, p, layers, memory_budget, smallest)) fitting.push_back(std::move(*t));
  if (fitting.empty()) {
    // (every trial failed, so each bisection went up to all layers: `smallest` is a plan's)
    throw ir::Error(fmt::format("recompute auto: no policy fits the memory budget of {} bytes; the least activation "
                                "memory of any plan is {} bytes, as planned here, before fusion (the compile report's "
                                "activations, planned after it, are fewer). Raise the budget to it or more ([compile] "
                                "memory_budget, --memory-budget, or recompute{{budget=...}} in bertc-opt) or lower the "
                                "batch size",
                                memory_budget, smallest));
  }
  Trial& best = *std::min_element(fitting.begin(), fitting.end(), [](const Trial& a, const Trial& b) {
    return a.result.recompute_flops < b.result.recompute_flops;
  });
  RecomputeResult r = best.result;
  r.policy = best.plan == Plan::None || best.plan == Plan::Selective ? "auto: " + r.policy
             : best.plan == Plan::Full ? fmt::format("auto: full on {} of {} layers", r.layers, layers)
                                       : fmt::format("auto: full on {} of {} layers, selective on the rest", r.layers, layers);
  graph = std::move(best.graph);
  return r;
}

}  // namespace bertc::passes
