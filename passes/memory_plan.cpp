// Lifetimes, in-place aliasing and offset assignment (greedy by size; in time order for huge graphs).
#include "passes/memory_plan.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include <fmt/format.h>

namespace bertc::passes {
namespace {

using ir::OpKind;

int64_t aligned(int64_t bytes) { return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

// Whether `op` reads `target` only element by element, each element where it writes the same
// element of its results (so a kernel may overwrite target in place): not a single-element value,
// which every thread reads, and within a fused op not through a broadcast, reduction or load (a
// layout op reads other elements than it writes).
bool reads_only_elementwise(const ir::Graph& g, const ir::Op& op, ir::ValueId target) {
  const ir::TensorType& type = g.value(target).type;
  if (type.numel() <= 1) return false;
  if (op.kind != OpKind::Fused) return true;  // single ops that read and write a tensor of its size
  const ir::Graph& body = op.region.graph();
  const auto inputs = body.values_of(OpKind::Input);
  for (size_t i = 0; i < op.operands.size(); ++i) {
    if (op.operands[i] != target) continue;
    for (const ir::Op& inner : body.ops())
      for (ir::ValueId v : inner.operands)
        if (v == inputs[i] && (inner.results.empty() || body.value(inner.result()).type.shape != type.shape ||
                               inner.info().traits.pattern == ir::FusionPattern::Load))
          return false;
  }
  return true;
}

struct UnionFind {
  std::vector<size_t> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  size_t find(size_t x) { return parent[x] == x ? x : parent[x] = find(parent[x]); }
  void join(size_t a, size_t b) { parent[find(a)] = find(b); }
};

// Greedy by size (the largest buffers first, each at the lowest offset free for its lifetime)
// finds tight arenas, and costs the number of pairs of buffers alive at once: fine for models,
// too slow for a graph of a million values all alive together (a fused chain's results). Past
// this many pairs, buffers are placed in the order they are made instead (best fit, O(n log n)).
constexpr size_t kGreedyPlacementPairs = size_t{1} << 24;

// Pairs of buffers alive at once, about (each pair counted where the later one starts).
size_t overlapping_pairs(const std::vector<Buffer>& buffers, size_t ops) {
  std::vector<int64_t> starts(ops + 2, 0), ends(ops + 2, 0);
  for (const Buffer& b : buffers) ++starts[b.first], ++ends[b.last + 1];
  size_t pairs = 0;
  int64_t live = 0;
  for (size_t t = 0; t <= ops; ++t) {
    live -= ends[t];
    if (starts[t] > 0) pairs += static_cast<size_t>(starts[t]) * static_cast<size_t>(live + starts[t] - 1);
    live += starts[t];
  }
  return pairs;
}

// The placed buffers, found by lifetime: a segment tree over op indices holding each buffer at the
// nodes that cover its lifetime (who is alive at an op), and the buffers by first op (who starts
// within a lifetime). A query costs log(ops) plus what it returns.
class PlacedBuffers {
 public:
  explicit PlacedBuffers(size_t ops) : size_(1) {
    while (size_ < ops + 1) size_ *= 2;
    nodes_.resize(2 * size_);
  }
  void add(size_t index, const Buffer& b) {
    for (size_t lo = b.first + size_, hi = b.last + size_ + 1; lo < hi; lo /= 2, hi /= 2) {
      if (lo & 1) nodes_[lo++].push_back(index);
      if (hi & 1) nodes_[--hi].push_back(index);
    }
    by_first_.emplace(b.first, index);
  }
  // Every placed buffer alive at some op of b's lifetime.
  std::vector<size_t> overlapping(const Buffer& b) const {
    std::vector<size_t> out;
    for (size_t node = b.first + size_; node >= 1; node /= 2) out.insert(out.end(), nodes_[node].begin(), nodes_[node].end());
    for (auto it = by_first_.upper_bound(b.first); it != by_first_.end() && it->first <= b.last; ++it) out.push_back(it->second);
    return out;
  }

 private:
  size_t size_;
  std::vector<std::vector<size_t>> nodes_;
  std::multimap<size_t, size_t> by_first_;
};

int64_t place_largest_first(std::vector<Buffer>& buffers, size_t ops) {
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return buffers[a].bytes != buffers[b].bytes ? buffers[a].bytes > buffers[b].bytes : a < b;
  });
  PlacedBuffers placed(ops);
  int64_t arena = 0;
  for (size_t i : order) {
    Buffer& b = buffers[i];
    std::vector<std::pair<int64_t, int64_t>> taken;  // [offset, end) of buffers alive at the same time
    for (size_t j : placed.overlapping(b)) taken.emplace_back(buffers[j].offset, buffers[j].offset + buffers[j].bytes);
    std::sort(taken.begin(), taken.end());
    int64_t offset = 0;
    for (const auto& [start, end] : taken) {
      if (start - offset >= b.bytes) break;
      offset = std::max(offset, end);
    }
    b.offset = offset;
    arena = std::max(arena, offset + b.bytes);
    placed.add(i, b);
  }
  return arena;
}

// Op by op: the buffers whose lifetime ended are freed (coalesced with free neighbours), then the
// ones made at this op are placed, largest first, in the smallest free block that holds them, or
// at the top of the arena.
int64_t place_in_time_order(std::vector<Buffer>& buffers, size_t ops) {
  std::vector<std::vector<size_t>> starting(ops + 1), ending(ops + 2);
  for (size_t i = 0; i < buffers.size(); ++i) {
    starting[buffers[i].first].push_back(i);
    ending[buffers[i].last + 1].push_back(i);
  }
  std::map<int64_t, int64_t> free_at;             // offset -> bytes of each free block
  std::set<std::pair<int64_t, int64_t>> by_size;  // (bytes, offset) of the same blocks
  int64_t top = 0;
  auto take_block = [&](std::map<int64_t, int64_t>::iterator it) {
    by_size.erase({it->second, it->first});
    free_at.erase(it);
  };
  auto release = [&](int64_t offset, int64_t bytes) {
    auto next = free_at.lower_bound(offset);
    if (next != free_at.end() && next->first == offset + bytes) {
      bytes += next->second;
      take_block(next);
    }
    auto prev = free_at.lower_bound(offset);
    if (prev != free_at.begin() && std::prev(prev)->first + std::prev(prev)->second == offset) {
      --prev;
      offset = prev->first;
      bytes += prev->second;
      take_block(prev);
    }
    if (offset + bytes == top) {
      top = offset;  // the top block goes back to the unused end
      return;
    }
    free_at.emplace(offset, bytes);
    by_size.emplace(bytes, offset);
  };
  int64_t arena = 0;
  for (size_t t = 0; t <= ops; ++t) {
    for (size_t i : ending[t]) release(buffers[i].offset, buffers[i].bytes);
    std::sort(starting[t].begin(), starting[t].end(),
              [&](size_t a, size_t b) { return buffers[a].bytes > buffers[b].bytes; });
    for (size_t i : starting[t]) {
      Buffer& b = buffers[i];
      const auto fit = by_size.lower_bound({b.bytes, std::numeric_limits<int64_t>::min()});
      if (fit == by_size.end()) {
        b.offset = top;
        top += b.bytes;
      } else {
        const auto [bytes, offset] = *fit;
        take_block(free_at.find(offset));
        b.offset = offset;
        if (bytes > b.bytes) {
          free_at.emplace(offset + b.bytes, bytes - b.bytes);
          by_size.emplace(bytes - b.bytes, offset + b.bytes);
        }
      }
      arena = std::max(arena, top);
    }
  }
  return arena;
}

}  // namespace

MemoryPlan plan_memory(const ir::Graph& g) {
  MemoryPlan plan;
  const size_t n = g.ops().size();
  std::vector<size_t> def(g.num_values(), 0), last(g.num_values(), 0);
  std::vector<bool> planned(g.num_values(), false);
  int64_t all_bytes = 0;
  for (size_t i = 0; i < n; ++i) {
    const ir::Op& op = g.ops()[i];
    for (ir::ValueId v : op.operands) last[v] = std::max(last[v], i);
    for (ir::ValueId r : op.results) {
      def[r] = last[r] = i;
      const int64_t bytes = g.value(r).type.bytes();
      // (every offset, arena top and live total below is at most this sum: it passing 2^62 wrapped
      // them, a plan of negative total printed with success)
      all_bytes = ir::checked_sum(all_bytes, bytes + kArenaAlignment, "the bytes of the graph's values together");
      if (all_bytes > (int64_t{1} << 62))
        throw ir::Error(fmt::format("the graph's values hold {} bytes together, past the 2^62 a memory plan can place",
                                    all_bytes));
      switch (op.kind) {
        case OpKind::Param: plan.param_bytes += bytes; break;
        case OpKind::State: plan.state_bytes += bytes; break;
        case OpKind::Input: plan.input_bytes += bytes; break;
        case OpKind::Constant: break;  // a literal in the kernels that read it
        default: planned[r] = true;
      }
    }
  }
  for (ir::ValueId v : g.outputs()) last[v] = n;  // read back after the step
  // A value that becomes a param's or state's next value is written straight into that persistent
  // buffer when nothing reads the old contents after it is made (gradient accumulation, optimizer
  // updates): it takes no arena space.
  std::vector<size_t> last_read(g.num_values(), 0);
  for (size_t i = 0; i < n; ++i)
    if (g.ops()[i].kind != OpKind::Update)
      for (ir::ValueId v : g.ops()[i].operands) last_read[v] = std::max(last_read[v], i);
  for (const ir::Op& op : g.ops()) {
    if (op.kind != OpKind::Update) continue;
    const ir::ValueId target = op.operands[0], next = op.operands[1];
    if (planned[next] && last_read[target] <= def[next] && reads_only_elementwise(g, g.producer(next), target))
      planned[next] = false;
  }
  // A reshape of a value outside the arena (an input, a param, a next value written into its
  // param) is a view of that buffer and takes no arena space either.
  for (const ir::Op& op : g.ops())
    if (ir::is_view(op.kind)) planned[op.result()] = planned[op.operands[0]];
  // Alias classes: a reshape is a view of its operand; an in-place op reuses a dying operand.
  // An operand's bytes are free at op i only when its whole class dies there: a reshape dying
  // at i may view a value read later (or kept to the end: `bertc check` keeps every value).
  UnionFind alias(g.num_values());
  std::vector<size_t> class_last = last;  // by class root: the last op that reads any of its values
  for (size_t i = 0; i < n; ++i) {
    const ir::Op& op = g.ops()[i];
    if (op.results.size() != 1 || !planned[op.result()]) continue;
    const int64_t bytes = g.value(op.result()).type.bytes();
    for (ir::ValueId v : op.operands) {
      const bool view = ir::is_view(op.kind);
      const bool in_place = ir::may_run_in_place(op.kind) && class_last[alias.find(v)] == i && planned[v] &&
                            g.value(v).type.bytes() == bytes;
      if (planned[v] && (view || in_place)) {
        const size_t joined = std::max(class_last[alias.find(v)], class_last[alias.find(op.result())]);
        alias.join(op.result(), v);
        class_last[alias.find(v)] = joined;
        break;
      }
    }
  }
  std::map<size_t, Buffer> classes;
  for (ir::ValueId v = 0; v < g.num_values(); ++v) {
    if (!planned[v]) continue;
    Buffer& b = classes[alias.find(v)];
    if (b.values.empty()) b.first = def[v];
    b.values.push_back(v);
    b.bytes = std::max(b.bytes, aligned(g.value(v).type.bytes()));
    b.first = std::min(b.first, def[v]);
    b.last = std::max(b.last, last[v]);
  }
  for (auto& [root, b] : classes) plan.buffers.push_back(std::move(b));

  // The live total over time (a lower bound on any placement), by a sweep over events.
  std::vector<int64_t> delta(n + 2, 0);
  for (const Buffer& b : plan.buffers) {
    delta[b.first] += b.bytes;
    delta[b.last + 1] -= b.bytes;
  }
  int64_t live = 0;
  for (size_t i = 0; i <= n; ++i) {
    live += delta[i];
    if (live > plan.live_peak_bytes) plan.live_peak_bytes = live, plan.peak_op = i;
  }

  plan.arena_bytes = overlapping_pairs(plan.buffers, n) <= kGreedyPlacementPairs ? place_largest_first(plan.buffers, n)
                                                                                 : place_in_time_order(plan.buffers, n);
  plan.offset_of.assign(g.num_values(), -1);
  for (const Buffer& b : plan.buffers)
    for (ir::ValueId v : b.values) plan.offset_of[v] = b.offset;
  return plan;
}

std::string describe(const MemoryPlan& p) {
  auto mib = [](int64_t b) {
    return b < (1 << 20) ? fmt::format("{} bytes", b) : fmt::format("{:.1f} MiB", static_cast<double>(b) / (1 << 20));
  };
  return fmt::format("arena {} in {} buffers (live peak {} at op {}), params {}, optimizer state {}, inputs {}, "
                     "total {}",
                     mib(p.arena_bytes), p.buffers.size(), mib(p.live_peak_bytes), p.peak_op, mib(p.param_bytes),
                     mib(p.state_bytes), mib(p.input_bytes), mib(p.total_bytes()));
}

}  // namespace bertc::passes
