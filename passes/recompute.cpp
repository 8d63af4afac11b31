// Choosing the values to drop (per policy) and rewriting backward uses to recomputed copies.
#include "passes/recompute.h"

#include <algorithm>
#include <functional>
#include <map>
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

bool is_source(OpKind k) { return k == OpKind::Input || k == OpKind::Param || k == OpKind::State || k == OpKind::Constant; }

// Ops whose results are cheap to make again: no matrix product, no reduction across rows.
bool is_cheap(OpKind k) {
  switch (k) {
    case OpKind::Neg: case OpKind::Exp: case OpKind::Log: case OpKind::Sqrt: case OpKind::Rsqrt: case OpKind::Tanh:
    case OpKind::Gelu: case OpKind::Relu: case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div:
    case OpKind::Minimum: case OpKind::Maximum: case OpKind::Where: case OpKind::Cast: case OpKind::Dropout:
    case OpKind::Softmax: case OpKind::Reshape: case OpKind::Permute: case OpKind::Slice: case OpKind::Broadcast:
      return true;
    default:
      return false;
  }
}

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
    const bool cheap = is_cheap(op.kind) || op.kind == OpKind::LayerNorm || op.kind == OpKind::Attention;
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

std::set<ir::ValueId> choose_full(const ir::Graph& g, const StepInfo& s, int64_t max_layers) {
  std::vector<std::string> layers;  // in forward order
  for (size_t i = 0; i < s.boundary; ++i) {
    const std::string l = layer_of(g.ops()[i].scope);
    if (!l.empty() && std::find(layers.begin(), layers.end(), l) == layers.end()) layers.push_back(l);
  }
  std::set<std::string> chosen(layers.begin(), layers.begin() + std::min<int64_t>(max_layers, layers.size()));
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
  frontend::Builder b(g.name());
  GraphCopy copy(g, b);
  std::map<ir::ValueId, frontend::Tensor> again;  // recomputed copies, made once
  int64_t flops = 0;
  std::function<frontend::Tensor(ir::ValueId)> recomputed = [&](ir::ValueId v) -> frontend::Tensor {
    if (auto it = again.find(v); it != again.end()) return it->second;
    const ir::Op& op = g.producer(v);
    std::vector<frontend::Tensor> in;
    for (ir::ValueId u : op.operands) in.push_back(drop.count(u) ? recomputed(u) : copy[u]);
    std::vector<ir::TensorType> types;
    for (ir::ValueId r : op.results) types.push_back(g.value(r).type);
    frontend::Builder::OpScope scope(b, "recompute/" + op.scope);
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
    std::vector<frontend::Tensor> in;
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

RecomputeResult apply_policy(ir::Graph& g, const std::string& policy, int64_t layers) {
  const StepInfo s = analyse(g);
  std::set<ir::ValueId> drop;
  if (policy == "selective") drop = choose_selective(g, s);
  else if (policy == "full") drop = choose_full(g, s, layers);
  else if (policy != "none") throw ir::Error(fmt::format("recompute policy '{}' is not none, selective, full or auto", policy));
  RecomputeResult r{policy, policy == "full" ? layers : 0, static_cast<int64_t>(drop.size()), 0};
  r.recompute_flops = apply(g, s, drop);
  return r;
}

}  // namespace

RecomputeResult recompute(ir::Graph& graph, const std::string& policy, int64_t memory_budget) {
  const int64_t layers = count_layers(graph);
  if (policy != "auto") return apply_policy(graph, policy, layers);
  if (memory_budget <= 0) throw ir::Error("recompute auto needs a memory budget (bytes)");
  // Candidates from the fewest recompute FLOPs up: none, selective, full on 1..L layers.
  std::vector<std::pair<std::string, int64_t>> candidates = {{"none", 0}, {"selective", 0}};
  for (int64_t k = 1; k <= layers; ++k) candidates.emplace_back("full", k);
  int64_t smallest = -1;
  for (const auto& [p, k] : candidates) {
    ir::Graph trial = graph;
    RecomputeResult r = apply_policy(trial, p, k);
    const int64_t arena = plan_memory(trial).arena_bytes;
    if (arena <= memory_budget) {
      graph = std::move(trial);
      r.policy = p == "full" ? fmt::format("auto: full on {} of {} layers", k, layers) : "auto: " + p;
      return r;
    }
    smallest = smallest < 0 ? arena : std::min(smallest, arena);
  }
  throw ir::Error(fmt::format("recompute auto: no policy fits the memory budget of {} bytes; the smallest planned "
                              "activation memory is {} bytes (full recompute). Raise [compile] memory_budget or "
                              "lower the batch size",
                              memory_budget, smallest));
}

}  // namespace bertc::passes
