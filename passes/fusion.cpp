// Greedy grouping of ops into kernels (union-find over ops, anchors first), then rebuilding the
// graph with one fused op per group in a topological order of the groups.
#include "passes/fusion.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <queue>
#include <set>

#include <fmt/format.h>

#include "passes/graph_copy.h"
#include "passes/optimizer.h"
#include "ir/value_names.h"

namespace bertc::passes {
namespace {

using ir::OpKind;

using ir::FusionPattern;

// Anchors of groups: a group's anchor is its one non-elementwise pattern (loads count as
// elementwise once in a group).
bool elementwise_or_load(FusionPattern p) { return p == FusionPattern::Elementwise || p == FusionPattern::Load; }

class Fuser {
 public:
  explicit Fuser(const ir::Graph& g)
      : g_(g), n_(g.ops().size()), parent_(n_), first_(n_), last_(n_), anchor_(n_, FusionPattern::Elementwise), stamp_(n_, 0) {
    std::iota(parent_.begin(), parent_.end(), 0);
    first_ = last_ = parent_;
    members_.resize(n_);
    for (size_t i = 0; i < n_; ++i) {
      members_[i] = {i};
      const FusionPattern p = ir::fusion_pattern(g.ops()[i]);
      anchor_[i] = p == FusionPattern::Load ? FusionPattern::Elementwise : p;
    }
    succ_.resize(n_);
    for (size_t i = 0; i < n_; ++i)
      for (ir::ValueId v : g.ops()[i].operands) succ_[g.value(v).producer].push_back(i);
  }

  std::vector<std::vector<size_t>> groups() {
    // (The optimizer graph: its optimizer ops, or what lower_lamb made of them, and its step count.)
    optimizer_ = is_optimizer_graph(g_) ||
                 std::any_of(g_.ops().begin(), g_.ops().end(),
                             [](const ir::Op& op) { return ir::fusion_pattern(op) == FusionPattern::Optimizer; });
    if (optimizer_) {
      group_optimizer();
    } else {
      for (size_t i = 0; i < n_; ++i)
        if (pattern(i) == FusionPattern::Row) grow_row(i);
      pair_cross_entropy();
      for (size_t i = 0; i < n_; ++i)
        if (pattern(i) == FusionPattern::Matmul) grow_epilogue(i, out_shape(i));
      for (size_t i = 0; i < n_; ++i)
        if (pattern(i) == FusionPattern::Reduce && singleton(i)) grow_reduce(i);
      for (size_t i = 0; i < n_; ++i) grow_pointwise(i);
    }
    std::map<size_t, std::vector<size_t>> by_root;
    for (size_t i = 0; i < n_; ++i)
      if (ir::launches_kernel(op(i).kind)) by_root[find(i)].push_back(i);
    std::vector<std::vector<size_t>> out;
    for (auto& [root, m] : by_root) out.push_back(std::move(m));
    return out;
  }

  // The family of a group's kernel: the family of its anchor op (the row op's, the matmul's, the
  // reduction's, as ops.def gives them); in the optimizer graph the update kernel (which holds the
  // optimizer ops) or the norm kernel (the reductions); else pointwise.
  ir::KernelFamily family(const std::vector<size_t>& group) const {
    const FusionPattern anchor = anchor_[find_const(group.front())];
    if (anchor == FusionPattern::Row || anchor == FusionPattern::Matmul || anchor == FusionPattern::Reduce)
      for (size_t i : group)
        if (pattern(i) == anchor) return op(i).info().traits.family;
    if (optimizer_) {
      for (size_t i : group)
        if (whole_tensor_sum(i)) return ir::KernelFamily::MultiTensorNorm;
      return ir::KernelFamily::MultiTensorUpdate;
    }
    return ir::KernelFamily::Pointwise;
  }

 private:
  const ir::Op& op(size_t i) const { return g_.ops()[i]; }
  FusionPattern pattern(size_t i) const { return ir::fusion_pattern(op(i)); }
  ir::Shape out_shape(size_t i) const { return g_.value(op(i).results[0]).type.shape; }
  size_t find(size_t x) { return parent_[x] == x ? x : parent_[x] = find(parent_[x]); }
  size_t find_const(size_t x) const {
    while (parent_[x] != x) x = parent_[x];
    return x;
  }
  bool singleton(size_t i) { return members_[find(i)].size() == 1; }
  size_t producer(ir::ValueId v) const { return g_.value(v).producer; }

  // True when some path leads from group a to group b through an op of neither: merging them
  // would then make the fused op depend on itself. Searched from the smaller group (forward from
  // a's members or backward from b's), and only among ops between a's first member and b's last
  // (ops are in topological order: no path leaves that window and comes back), so that merging
  // small groups into a large one costs the small one's size, not the large one's.
  bool path_through_outside(size_t a, size_t b) {
    ++epoch_;
    const size_t lo = first_[a], hi = last_[b];
    if (lo > hi) return false;
    const bool forward = members_[a].size() <= members_[b].size();
    const size_t from = forward ? a : b, to = forward ? b : a;
    std::vector<std::pair<size_t, bool>> stack;  // (op, left the pair of groups already)
    for (size_t m : members_[from]) stack.emplace_back(m, false);
    auto visit = [&](size_t y, bool outside) {
      if (y < lo || y > hi) return false;
      const size_t gy = find(y);
      if (gy == to) return outside;
      if (gy == from || stamp_[y] == epoch_) return false;
      stamp_[y] = epoch_;
      stack.emplace_back(y, true);
      return false;
    };
    while (!stack.empty()) {
      auto [x, outside] = stack.back();
      stack.pop_back();
      if (forward) {
        for (size_t y : succ_[x])
          if (visit(y, outside)) return true;
      } else {
        for (ir::ValueId v : op(x).operands)
          if (visit(producer(v), outside)) return true;
      }
    }
    return false;
  }

  // Merges the groups of ops x and y when that keeps the group graph acyclic; the anchor of the
  // result is the non-pointwise one (at most one may have an anchor).
  // Forward or backward (recomputed ops run in the backward): a kernel never spans both, or it
  // would keep forward values alive into the backward and undo recomputation.
  static bool backward(const ir::Op& op) { return op.scope.starts_with("backward") || op.scope.starts_with("recompute"); }

  bool merge(size_t x, size_t y) {
    size_t a = find(x), b = find(y);
    if (a == b) return true;
    if (backward(op(x)) != backward(op(y)) && !allow_row_pair_) return false;
    const FusionPattern ra = anchor_[a], rb = anchor_[b];
    if (ra != FusionPattern::Elementwise && rb != FusionPattern::Elementwise &&
        !(ra == FusionPattern::Row && rb == FusionPattern::Row && allow_row_pair_))
      return false;
    if (path_through_outside(a, b) || path_through_outside(b, a)) return false;
    // The smaller into the larger: each op moves O(log n) times.
    if (members_[a].size() < members_[b].size()) std::swap(a, b);
    join(a, b);
    anchor_[a] = ra != FusionPattern::Elementwise ? ra : rb;
    return true;
  }

  // Moves group b's ops into group a (both roots); a stays the root, with its anchor.
  void join(size_t a, size_t b) {
    parent_[b] = a;
    members_[a].insert(members_[a].end(), members_[b].begin(), members_[b].end());
    members_[b].clear();
    members_[b].shrink_to_fit();
    first_[a] = std::min(first_[a], first_[b]);
    last_[a] = std::max(last_[a], last_[b]);
  }

  bool pointwise_like(size_t i) const { return elementwise_or_load(pattern(i)); }

  // Producers of a row or reduce op's input (pointwise ops and loads whose result broadcasts to
  // `shape`), recursively: they run inside the kernel, before the reduction. (Depth first, as a
  // recursion would go, on an explicit stack: a chain may be a million ops long.)
  void grow_prologue(size_t at, const ir::Shape& shape) {
    std::vector<std::pair<size_t, size_t>> stack{{at, 0}};  // (op, next operand to look at)
    while (!stack.empty()) {
      auto& [x, next] = stack.back();
      if (next == op(x).operands.size()) {
        stack.pop_back();
        continue;
      }
      const size_t p = producer(op(x).operands[next++]);
      if (!pointwise_like(p) || !singleton(p) || op(p).results.size() != 1) continue;
      if (!ir::broadcasts_to(out_shape(p), shape)) continue;
      if (merge(x, p)) stack.emplace_back(p, 0);
    }
  }

  // Pointwise consumers of op `at`'s results with the kernel's output shape, recursively (depth
  // first, on an explicit stack).
  void grow_epilogue(size_t at, const ir::Shape& shape) {
    std::vector<std::pair<size_t, size_t>> stack{{at, 0}};  // (op, next consumer to look at)
    while (!stack.empty()) {
      auto& [x, next] = stack.back();
      if (next == succ_[x].size()) {
        stack.pop_back();
        continue;
      }
      const size_t c = succ_[x][next++];
      if (pattern(c) != FusionPattern::Elementwise || !singleton(c) || out_shape(c) != shape) continue;
      if (merge(x, c)) stack.emplace_back(c, 0);
    }
  }

  void grow_row(size_t i) {
    grow_prologue(i, g_.value(op(i).operands[0]).type.shape);
    if (op(i).results.size() == 1 && op(i).kind != OpKind::CrossEntropy) grow_epilogue(i, out_shape(i));
  }

  // The loss and its gradient read the same logits: one kernel computes both.
  void pair_cross_entropy() {
    allow_row_pair_ = true;
    std::multimap<ir::ValueId, size_t> losses_of;  // logits -> the cross-entropy ops reading them
    for (size_t i = 0; i < n_; ++i) {
      if (op(i).kind == OpKind::CrossEntropy) losses_of.emplace(op(i).operands[0], i);
      if (op(i).kind != OpKind::CrossEntropyGrad) continue;
      auto [begin, end] = losses_of.equal_range(op(i).operands[1]);
      for (auto it = begin; it != end; ++it) merge(it->second, i);
    }
    allow_row_pair_ = false;
  }

  void grow_reduce(size_t i) {
    grow_prologue(i, g_.value(op(i).operands[0]).type.shape);
    grow_epilogue(i, out_shape(i));
  }

  // Elementwise ops of one shape merge with the pointwise groups of their operands.
  void grow_pointwise(size_t i) {
    if (!pointwise_like(i) || op(i).results.size() != 1) return;
    if (anchor_[find(i)] != FusionPattern::Elementwise) return;
    const ir::Shape shape = out_shape(i);
    for (ir::ValueId v : op(i).operands) {
      const size_t p = producer(v);
      if (!pointwise_like(p) || anchor_[find(p)] != FusionPattern::Elementwise || out_shape(p) != shape) continue;
      merge(i, p);
    }
  }

  // The optimizer graph: everything the gradient norm and the overflow check need in one kernel,
  // the rest in another. Both are reductions over every gradient, which the update must wait
  // for: no kernel can finish a reduction over all its blocks and then use it.
  // A sum of a whole tensor (or the overflow check over all of them): the family adds it up
  // across blocks, so what reads it elementwise must run in a later kernel.
  bool whole_tensor_sum(size_t i) const {
    const ir::Op& o = op(i);
    if (o.kind == ir::OpKind::AllFinite) return true;
    return pattern(i) == FusionPattern::Reduce && g_.value(o.results[0]).type.numel() == 1 &&
           g_.value(o.operands[0]).type.numel() > 1;
  }

  // The optimizer step as kernels separated by whole-tensor sums: the norm kernel (what the
  // gradient norm and the overflow check need); then, while sums are left (LAMB's per-tensor norms,
  // lower_lamb.h), a kernel of the next sums and what they need; then the update kernel, the rest.
  // With AdamW there is no middle kernel.
  void group_optimizer() {
    std::vector<int> kernel(n_, -1);
    // Marks the unassigned kernel-launching ancestors of `stack` (themselves included) with k.
    auto claim = [&](std::vector<size_t> stack, int k) {
      while (!stack.empty()) {
        const size_t x = stack.back();
        stack.pop_back();
        if (kernel[x] >= 0 || !ir::launches_kernel(op(x).kind)) continue;
        kernel[x] = k;
        for (ir::ValueId v : op(x).operands) stack.push_back(producer(v));
      }
    };
    // Whether an unassigned sum other than i is among i's unassigned ancestors.
    auto waits_on_a_sum = [&](size_t i) {
      std::vector<size_t> stack;
      std::vector<bool> seen(n_, false);
      for (ir::ValueId v : op(i).operands) stack.push_back(producer(v));
      while (!stack.empty()) {
        const size_t x = stack.back();
        stack.pop_back();
        if (seen[x] || kernel[x] >= 0 || !ir::launches_kernel(op(x).kind)) continue;
        seen[x] = true;
        if (whole_tensor_sum(x)) return true;
        for (ir::ValueId v : op(x).operands) stack.push_back(producer(v));
      }
      return false;
    };
    std::vector<size_t> first;
    if (auto norm = g_.find(ir::names::kGradNorm)) first.push_back(producer(*norm));
    for (size_t i = 0; i < n_; ++i)
      if (op(i).kind == ir::OpKind::AllFinite) first.push_back(i);
    claim(first, 0);
    int kernels = 1;
    for (;;) {
      std::vector<size_t> sums;
      for (size_t i = 0; i < n_; ++i)
        if (kernel[i] < 0 && whole_tensor_sum(i) && !waits_on_a_sum(i)) sums.push_back(i);
      if (sums.empty()) break;
      claim(sums, kernels++);
    }
    std::map<int, size_t> first_of;
    for (size_t i = 0; i < n_; ++i) {
      if (!ir::launches_kernel(op(i).kind)) continue;
      const int k = kernel[i] >= 0 ? kernel[i] : kernels;  // the update kernel
      auto [it, fresh] = first_of.try_emplace(k, i);
      if (!fresh) force_merge(it->second, i);
    }
  }

  void force_merge(size_t x, size_t y) {
    const size_t a = find(x), b = find(y);
    if (a != b) join(a, b);
  }

  const ir::Graph& g_;
  size_t n_;
  std::vector<size_t> parent_;
  std::vector<size_t> first_, last_;  // per group root: its first and last member (op order)
  std::vector<FusionPattern> anchor_;
  std::vector<std::vector<size_t>> members_, succ_;
  std::vector<uint64_t> stamp_;
  uint64_t epoch_ = 0;
  bool allow_row_pair_ = false;
  bool optimizer_ = false;  // fusing an optimizer graph
};

}  // namespace

size_t count_launches(const ir::Graph& graph) {
  size_t n = 0;
  for (const ir::Op& op : graph.ops()) n += ir::launches_kernel(op.kind);
  return n;
}

FusionResult fuse(ir::Graph& graph) {
  FusionResult result;
  result.kernels_before = count_launches(graph);
  Fuser fuser(graph);
  const std::vector<std::vector<size_t>> groups = fuser.groups();

  // Which group each op is in (skip ops: none), and the group order: a topological order of the
  // groups, earliest first member first.
  std::vector<int64_t> group_of(graph.ops().size(), -1);
  for (size_t k = 0; k < groups.size(); ++k)
    for (size_t i : groups[k]) group_of[i] = static_cast<int64_t>(k);
  const auto& ops = graph.ops();
  // Units to emit: each group, and each skip op (sources, constants, reshapes, updates) alone.
  std::vector<std::vector<size_t>> units;
  std::vector<int64_t> unit_of(ops.size());
  for (size_t k = 0; k < groups.size(); ++k) units.push_back(groups[k]);
  for (size_t i = 0; i < ops.size(); ++i) {
    if (group_of[i] >= 0) unit_of[i] = group_of[i];
    else {
      unit_of[i] = static_cast<int64_t>(units.size());
      units.push_back({i});
    }
  }
  // Values a group must return: read by another unit, or graph outputs.
  std::vector<bool> read_outside(graph.num_values(), false);
  for (size_t i = 0; i < ops.size(); ++i)
    for (ir::ValueId v : ops[i].operands)
      if (unit_of[graph.value(v).producer] != unit_of[i]) read_outside[v] = true;
  for (ir::ValueId v : graph.outputs()) read_outside[v] = true;
  std::vector<std::set<size_t>> next(units.size());
  std::vector<size_t> indegree(units.size(), 0);
  for (size_t i = 0; i < ops.size(); ++i)
    for (ir::ValueId v : ops[i].operands) {
      const auto from = static_cast<size_t>(unit_of[graph.value(v).producer]), to = static_cast<size_t>(unit_of[i]);
      if (from != to && next[from].insert(to).second) ++indegree[to];
    }
  // Updates read the old target values: they keep running after every reader of their target.
  std::priority_queue<std::pair<size_t, size_t>, std::vector<std::pair<size_t, size_t>>, std::greater<>> ready;
  // Ready units go out in the order of their last member: a group runs where its last op ran, and
  // a unit waiting on a group can only let ops within that group's span run ahead of it (with the
  // first member, recomputation would drift into the forward pass).
  // When each op is due: its index, except that sources are due at once (they cost nothing and
  // block their readers) and an op whose results only feed updates (gradient accumulation, added
  // at the end of the graph) is due with its latest operand.
  std::vector<size_t> due(ops.size());
  {
    std::vector<bool> only_updates(ops.size(), true);
    for (const ir::Op& o : ops)
      for (ir::ValueId v : o.operands)
        if (o.kind != OpKind::Update) only_updates[graph.value(v).producer] = false;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ir::is_source(ops[i].kind)) {
        due[i] = 0;
      } else if (ops[i].kind == OpKind::Update) {
        // After every launch (the plan executor reads updates back after the last one; LAMB's
        // moments are final a kernel before its update kernel runs).
        due[i] = ops.size();
      } else if (only_updates[i] && !ops[i].results.empty()) {
        due[i] = 0;
        for (ir::ValueId v : ops[i].operands) due[i] = std::max(due[i], due[graph.value(v).producer]);
      } else {
        due[i] = i;
      }
    }
  }
  auto last_member = [&](size_t u) {
    size_t t = 0;
    for (size_t i : units[u]) t = std::max(t, due[i]);
    return t;
  };
  for (size_t u = 0; u < units.size(); ++u)
    if (indegree[u] == 0) ready.emplace(last_member(u), u);

  ir::Builder b(graph.name());
  GraphCopy copy(graph, b);
  size_t emitted = 0;
  while (!ready.empty()) {
    const size_t u = ready.top().second;
    ready.pop();
    ++emitted;
    const std::vector<size_t>& members = units[u];
    if (members.size() == 1) {
      copy.copy(ops[members[0]]);
    } else {
      std::vector<size_t> sorted = members;
      std::sort(sorted.begin(), sorted.end());
      // External operands become region inputs; constants are copied into the region instead.
      ir::Builder rb("region");
      GraphCopy inner(graph, rb);
      std::vector<ir::Tensor> operands;
      std::set<ir::ValueId> bound;
      for (size_t i : sorted)
        for (ir::ValueId v : ops[i].operands) {
          const size_t p = graph.value(v).producer;
          if (unit_of[p] == static_cast<int64_t>(u) || bound.count(v)) continue;
          bound.insert(v);
          if (ops[p].kind == OpKind::Constant) {
            inner.copy(ops[p], false);
            continue;
          }
          const ir::TensorType& t = graph.value(v).type;
          inner.map(v, rb.input(fmt::format("in{}", operands.size()), t.dtype, t.shape));
          operands.push_back(copy[v]);
        }
      for (size_t i : sorted) inner.copy(ops[i], false);
      // Results: values read outside the group, graph outputs and update values.
      std::vector<ir::ValueId> results;
      for (size_t i : sorted)
        for (ir::ValueId v : ops[i].results)
          if (read_outside[v]) results.push_back(v);
      std::sort(results.begin(), results.end());
      std::vector<ir::TensorType> types;
      for (ir::ValueId v : results) {
        rb.add_output(inner[v]);
        types.push_back(graph.value(v).type);
      }
      ir::Op fused{OpKind::Fused, {}, {}, ir::complete_attrs(ir::op_info(OpKind::Fused),
                                                             std::vector<ir::NamedAttr>{{"kernel", std::string(ir::enum_name(fuser.family(sorted)))}}),
                   {}, ops[sorted.front()].scope, ir::Region(std::move(rb).finish())};
      for (size_t i : sorted)
        if (!elementwise_or_load(ir::fusion_pattern(ops[i]))) fused.scope = ops[i].scope;
      const auto out = b.copy_op(fused, operands, types);
      for (size_t k = 0; k < results.size(); ++k) {
        copy.map(results[k], out[k]);
        if (!graph.value(results[k]).name.empty()) b.name(out[k], graph.value(results[k]).name);
      }
      ++result.fused_ops;
    }
    for (size_t w : next[u])
      if (--indegree[w] == 0) ready.emplace(last_member(w), w);
  }
  if (emitted != units.size()) throw ir::Error("fusion: the kernel groups depend on each other in a cycle");
  copy.copy_outputs();
  graph = std::move(b).finish();
  result.kernels_after = count_launches(graph);
  return result;
}

}  // namespace bertc::passes
