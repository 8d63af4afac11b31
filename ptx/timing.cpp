// The warps' critical paths through a block (see timing.h).
#include "ptx/timing.h"

#include <algorithm>

#include "ptx/operands.h"

namespace bertc::ptx {
namespace {

bool shared_space(const Opcode& op) { return op.has(Mod::shared); }

// The cycles until `in`'s results are ready.
uint32_t latency_of(const Instruction& in, const Latencies& l) {
  const Opcode& op = in.opcode;
  switch (op.op) {
    case Op::Mma: return l.mma;
    case Op::Ldmatrix:
    case Op::Shfl:
    case Op::Vote:
    case Op::Match: return l.shared;
    case Op::Ld: return shared_space(op) ? l.shared : op.has(Mod::param) || op.has(Mod::local) ? l.alu : l.global;
    case Op::Atom: return shared_space(op) ? l.shared : l.global;
    case Op::Ex2:
    case Op::Lg2:
    case Op::Rcp:
    case Op::Sqrt:
    case Op::Rsqrt:
    case Op::Sin:
    case Op::Cos:
    case Op::Tanh:
    case Op::Div: return op.types.empty() || !is_float(op.type(0)) ? l.alu : l.special;
    default: return l.alu;
  }
}

}  // namespace

BlockTimer::BlockTimer(const Entry& entry, const Latencies& latencies, size_t warps) {
  on_ = latencies.alu > 0;
  if (!on_) return;
  barrier_cycles_ = latencies.barrier;
  registers_ = entry.registers.size();
  decoded_.reserve(entry.body.size());
  for (const Instruction& in : entry.body) {
    Decoded d;
    const std::vector<int> read = registers_read(in), written = registers_written(in);
    d.first_source = static_cast<uint32_t>(operands_.size());
    operands_.insert(operands_.end(), read.begin(), read.end());
    d.sources = static_cast<uint32_t>(read.size());
    d.first_result = static_cast<uint32_t>(operands_.size());
    operands_.insert(operands_.end(), written.begin(), written.end());
    d.results = static_cast<uint32_t>(written.size());
    d.latency = latency_of(in, latencies);
    if (in.opcode.op == Op::Cp && in.opcode.has(Mod::async)) {
      d.async = in.opcode.has(Mod::commit_group) ? Decoded::Async::Commit
                : in.opcode.has(Mod::wait_group) || in.opcode.has(Mod::wait_all) ? Decoded::Async::Wait
                                                                                  : Decoded::Async::Copy;
      // (a count in a register, which NVRTC does not emit, is taken as 0: waiting for every group)
      if (in.opcode.has(Mod::wait_group) && !in.operands.empty() && in.operands[0].kind == Operand::Kind::Immediate)
        d.groups_kept = static_cast<uint32_t>(in.operands[0].value);
      d.uncommitted_too = in.opcode.has(Mod::wait_all);
      d.latency = latencies.global;
    }
    const Op op = in.opcode.op;
    d.ends_block = op == Op::Bra || op == Op::Call || op == Op::Ret || op == Op::Exit || op == Op::Bar ||
                   op == Op::Membar || op == Op::Fence || d.async == Decoded::Async::Wait;
    decoded_.push_back(d);
  }
  for (const auto& [name, at] : entry.labels)
    if (static_cast<size_t>(at) < decoded_.size()) decoded_[static_cast<size_t>(at)].starts_block = true;
  floor_.resize(warps);
  begin_block();
}

void BlockTimer::begin_block() {
  if (!on_) return;
  const size_t warps = floor_.size();
  ready_.assign(warps * registers_, 0);
  floor_.assign(warps, 0);
  end_.assign(warps, 0);
  busy_.assign(warps, {});
  first_free_.assign(warps, 0);
  open_copies_.assign(warps, 0);
  committed_.assign(warps, {});
}

void BlockTimer::close_block(size_t warp) {
  floor_[warp] = end_[warp];
  busy_[warp].clear();
  first_free_[warp] = 0;
}

void BlockTimer::issue(size_t warp, size_t pc) {
  const Decoded& d = decoded_[pc];
  uint64_t* ready = ready_.data() + warp * registers_;
  if (d.starts_block && !busy_[warp].empty()) close_block(warp);
  // (a block's last instruction after the rest of it: a branch, a barrier, a wait orders them)
  uint64_t at = d.ends_block ? end_[warp] : floor_[warp];
  for (uint32_t i = 0; i < d.sources; ++i) at = std::max(at, ready[operands_[d.first_source + i]]);
  if (d.async == Decoded::Async::Wait) {
    std::vector<uint64_t>& groups = committed_[warp];
    const size_t waited = groups.size() > d.groups_kept ? groups.size() - d.groups_kept : 0;
    for (size_t g = 0; g < waited; ++g) at = std::max(at, groups[g]);
    groups.erase(groups.begin(), groups.begin() + static_cast<std::ptrdiff_t>(waited));
    if (d.uncommitted_too) at = std::max(at, open_copies_[warp]), open_copies_[warp] = 0;
  }
  // (the first cycle from `at` no other instruction of the block took: one issue a cycle; the
  // search starts past the block's first cycles, all taken, which a long block of independent
  // instructions would otherwise walk at each issue)
  std::vector<bool>& busy = busy_[warp];
  size_t slot = std::max(static_cast<size_t>(at - floor_[warp]), first_free_[warp]);
  while (slot < busy.size() && busy[slot]) ++slot;
  if (slot >= busy.size()) busy.resize(std::max(slot + 1, 2 * busy.size()), false);
  busy[slot] = true;
  while (first_free_[warp] < busy.size() && busy[first_free_[warp]]) ++first_free_[warp];
  at = floor_[warp] + slot;
  if (d.async == Decoded::Async::Copy) {  // (its data lands a global latency after it issues)
    open_copies_[warp] = std::max(open_copies_[warp], at + d.latency);
  } else if (d.async == Decoded::Async::Commit) {
    committed_[warp].push_back(open_copies_[warp]);
    open_copies_[warp] = 0;
  }
  for (uint32_t i = 0; i < d.results; ++i) ready[operands_[d.first_result + i]] = at + d.latency;
  end_[warp] = std::max(end_[warp], at + 1);
  if (d.ends_block) close_block(warp);
}

void BlockTimer::release(std::span<const size_t> warps) {
  uint64_t latest = 0;
  for (size_t w : warps) latest = std::max(latest, end_[w]);
  for (size_t w : warps) end_[w] = latest + barrier_cycles_, close_block(w);
}

uint64_t BlockTimer::cycles() const {
  uint64_t most = 0;
  for (size_t w = 0; w < end_.size(); ++w) {
    most = std::max(most, end_[w]);
    // (a warp's last results land after its last issue: a load's before the kernel ends)
    for (size_t r = 0; r < registers_; ++r) most = std::max(most, ready_[w * registers_ + r]);
  }
  return most;
}

}  // namespace bertc::ptx
