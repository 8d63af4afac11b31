// racecheck and initcheck over a block's shared memory (shared_checks.h).
#include "ptx/shared_checks.h"

#include <algorithm>

namespace bertc::ptx {

void SharedShadow::begin_block(uint64_t bytes, uint32_t warps,
                               const std::vector<std::pair<uint64_t, uint64_t>>& extents) {
  ++epoch_;
  block_start_ = epoch_;
  if (cells_.size() < bytes) cells_.resize(bytes);  // (older cells hold older epochs: never written here)
  declared_.assign(cells_.size(), false);
  for (const auto& [begin, end] : extents)
    std::fill(declared_.begin() + static_cast<std::ptrdiff_t>(std::min<uint64_t>(begin, declared_.size())),
              declared_.begin() + static_cast<std::ptrdiff_t>(std::min<uint64_t>(end, declared_.size())), true);
  if (warp_epoch_.size() < warps) warp_epoch_.resize(warps, 0);
  atomics_in_block_ = false;
}

SharedShadow::Stamp SharedShadow::stamp(uint32_t thread, uint32_t pc) const {
  return {thread, pc, epoch_, warp_epoch_.at(thread / 32)};
}

std::optional<SharedHazard> SharedShadow::read(uint32_t thread, uint32_t pc, uint64_t offset, uint64_t n) {
  std::optional<SharedHazard> found;
  const Stamp now = stamp(thread, pc);
  for (uint64_t b = offset; b < offset + n; ++b) {
    Cell& c = cells_[b];
    if (!found && !written(c, b) && declared_[b])
      found = SharedHazard{SharedHazard::Kind::Uninitialised, b, 0, 0};
    if (!found && !ordered(c.write, thread))
      found = SharedHazard{SharedHazard::Kind::ReadAfterWrite, b, c.write.thread, c.write.pc};
    if (atomics_in_block_)
      for (const Stamp* w : {&atomic_cells_[b].atomic, &atomic_cells_[b].other_atomic})
        if (!found && !ordered(*w, thread)) found = SharedHazard{SharedHazard::Kind::ReadAfterWrite, b, w->thread, w->pc};
    if (c.read.thread != thread && !ordered(c.read, thread)) c.other_read = c.read;
    c.read = now;
  }
  return found;
}

std::optional<SharedHazard> SharedShadow::write(uint32_t thread, uint32_t pc, uint64_t offset, uint64_t n) {
  std::optional<SharedHazard> found;
  const Stamp now = stamp(thread, pc);
  for (uint64_t b = offset; b < offset + n; ++b) {
    Cell& c = cells_[b];
    if (!found && c.write.epoch >= block_start_ && !ordered(c.write, thread))
      found = SharedHazard{SharedHazard::Kind::WriteAfterWrite, b, c.write.thread, c.write.pc};
    if (atomics_in_block_)
      for (const Stamp* w : {&atomic_cells_[b].atomic, &atomic_cells_[b].other_atomic})
        if (!found && w->epoch >= block_start_ && !ordered(*w, thread))
          found = SharedHazard{SharedHazard::Kind::WriteAfterWrite, b, w->thread, w->pc};
    for (const Stamp* r : {&c.read, &c.other_read})
      if (!found && r->epoch >= block_start_ && !ordered(*r, thread))
        found = SharedHazard{SharedHazard::Kind::WriteAfterRead, b, r->thread, r->pc};
    c.write = now;
  }
  return found;
}

std::optional<SharedHazard> SharedShadow::atomic(uint32_t thread, uint32_t pc, uint64_t offset, uint64_t n) {
  std::optional<SharedHazard> found;
  const Stamp now = stamp(thread, pc);
  if (!atomics_in_block_) {
    atomic_cells_.assign(cells_.size(), AtomicCell{});  // (older blocks' atomics are not this one's)
    atomics_in_block_ = true;
  }
  for (uint64_t b = offset; b < offset + n; ++b) {
    Cell& c = cells_[b];
    AtomicCell& a = atomic_cells_[b];
    if (!found && !written(c, b) && declared_[b])
      found = SharedHazard{SharedHazard::Kind::Uninitialised, b, 0, 0};
    else if (!found && c.write.epoch >= block_start_ && !ordered(c.write, thread))
      found = SharedHazard{SharedHazard::Kind::WriteAfterWrite, b, c.write.thread, c.write.pc};
    for (const Stamp* r : {&c.read, &c.other_read})
      if (!found && r->epoch >= block_start_ && !ordered(*r, thread))
        found = SharedHazard{SharedHazard::Kind::WriteAfterRead, b, r->thread, r->pc};
    if (a.atomic.thread != thread && !ordered(a.atomic, thread)) a.other_atomic = a.atomic;
    a.atomic = now;
  }
  return found;
}

}  // namespace bertc::ptx
