// The timing model behind a latency-aware projection: each warp of a block issues its
// instructions one a cycle at most, and an instruction waits until the registers it reads are
// ready: a result is ready its kind's latency after issue (an ALU op's few cycles, a global
// load's hundreds). Within a basic block (up to a branch, a barrier, a fence or a cp.async wait,
// or from a label) an instruction may issue before earlier ones that wait: the PTX's order is not
// the machine code's, which ptxas schedules, so the warp is timed as a list scheduler would place
// the block's instructions (each at the first free cycle its sources allow; memory dependences
// not seen: an optimistic bound there), and a block's last instruction closes it. Barriers release
// their warps together after the latest arrives; cp.async's data is ready a global latency after
// its copy, which wait_group waits for. The block's cycles are its slowest warp's: the critical
// path a multiprocessor cannot shorten by issuing faster, only by running other warps meanwhile
// (projection.h divides that over the blocks it holds at once). Issue contention between warps,
// register pressure, caches (every global load at the DRAM latency) and functional units' queues
// are not modelled: the throughput bounds are their part.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ptx/module.h"

namespace bertc::ptx {

// Cycles from an instruction's issue until a dependent one may issue, by kind (the caller fills
// them from its GPU table: ptx/ reads no table of its own). alu 0: the launch is not timed.
struct Latencies {
  uint32_t alu = 0;      // integer and f32 arithmetic, moves, comparisons, conversions
  uint32_t special = 0;  // the special function unit: ex2, lg2, rcp, sqrt, rsqrt, sin, cos, tanh, div
  uint32_t shared = 0;   // ld.shared, ldmatrix, shared atomics, shuffles and votes (the shared-memory pipe)
  uint32_t global = 0;   // ld of global, const or generic memory, global atomics, cp.async's data (DRAM: no cache)
  uint32_t mma = 0;      // mma.sync
  uint32_t barrier = 0;  // bar.sync after the last warp arrives
};

// The warps of one block through the timing model (one per block run).
class BlockTimer {
 public:
  // `entry`'s instructions decoded once for `warps` warps; an empty timer where latencies.alu is 0.
  BlockTimer(const Entry& entry, const Latencies& latencies, size_t warps);
  bool on() const { return on_; }
  // Every warp at cycle 0 with nothing in flight: a block's start.
  void begin_block();
  // Warp `warp` issues instruction `pc` (whether its guard lets it execute or not: it is issued).
  void issue(size_t warp, size_t pc);
  // The warps of `warps` leave a barrier they all waited at: at the latest arrival plus its cost.
  void release(std::span<const size_t> warps);
  // The block's cycles: its slowest warp's last issue, or the last of its results to be ready if
  // later (a load's before the kernel ends).
  uint64_t cycles() const;

 private:
  struct Decoded {
    uint32_t first_source = 0, sources = 0, first_result = 0, results = 0;
    uint32_t latency = 0;
    bool starts_block = false;  // a label's target: a basic block begins here
    bool ends_block = false;    // a branch, call, return, barrier, fence or cp.async wait: it ends one
    enum class Async : uint8_t { None, Copy, Commit, Wait } async = Async::None;
    uint32_t groups_kept = 0;  // cp.async.wait_group N: the newest N groups it does not wait for
    bool uncommitted_too = false;  // cp.async.wait_all: the copies not yet committed as well
  };
  bool on_ = false;
  uint32_t barrier_cycles_ = 0;
  size_t registers_ = 0;
  std::vector<Decoded> decoded_;
  std::vector<int> operands_;       // the registers each instruction reads, then those it writes
  // Closes warp `warp`'s basic block: what follows issues after all of it.
  void close_block(size_t warp);
  std::vector<uint64_t> ready_;     // per warp, per register: the cycle its value is ready
  std::vector<uint64_t> floor_;     // per warp: the cycle its basic block began at
  std::vector<uint64_t> end_;       // per warp: one past its latest issue
  std::vector<std::vector<bool>> busy_;  // per warp: the cycles of its block taken, from floor_
  std::vector<size_t> first_free_;       // per warp: busy_'s first cycle not taken (all before it are)
  std::vector<uint64_t> open_copies_;  // per warp: when its uncommitted cp.async data lands
  std::vector<std::vector<uint64_t>> committed_;  // per warp: when each committed group's data lands
};

}  // namespace bertc::ptx
