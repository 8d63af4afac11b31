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
}

SharedShadow::Stamp SharedShadow::stamp(uint32_t thread, uint32_t pc) const {
  return {thread, pc, epoch_, warp_epoch_.at(thread / 32)};
}

// Whether `earlier` happened before what `thread` does now: the same thread (program order), a
// block barrier since, or a collective of their one warp since.
bool SharedShadow::ordered(const Stamp& earlier, uint32_t thread) const {
  if (earlier.epoch == 0 || earlier.thread == thread || earlier.epoch < epoch_) return true;
  return earlier.thread / 32 == thread / 32 && earlier.warp_epoch < warp_epoch_.at(thread / 32);
}

std::optional<SharedHazard> SharedShadow::read(uint32_t thread, uint32_t pc, uint64_t offset, uint64_t n) {
  std::optional<SharedHazard> found;
  const Stamp now = stamp(thread, pc);
  for (uint64_t b = offset; b < offset + n; ++b) {
    Cell& c = cells_[b];
    if (!found && !written(c) && declared_[b])
      found = SharedHazard{SharedHazard::Kind::Uninitialised, b, 0, 0};
    for (const Stamp* w : {&c.write, &c.atomic, &c.other_atomic})
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
    for (const Stamp* w : {&c.write, &c.atomic, &c.other_atomic})
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
  for (uint64_t b = offset; b < offset + n; ++b) {
    Cell& c = cells_[b];
    if (!found && !written(c) && declared_[b])
      found = SharedHazard{SharedHazard::Kind::Uninitialised, b, 0, 0};
    else if (!found && c.write.epoch >= block_start_ && !ordered(c.write, thread))
      found = SharedHazard{SharedHazard::Kind::WriteAfterWrite, b, c.write.thread, c.write.pc};
    for (const Stamp* r : {&c.read, &c.other_read})
      if (!found && r->epoch >= block_start_ && !ordered(*r, thread))
        found = SharedHazard{SharedHazard::Kind::WriteAfterRead, b, r->thread, r->pc};
    if (c.atomic.thread != thread && !ordered(c.atomic, thread)) c.other_atomic = c.atomic;
    c.atomic = now;
  }
  return found;
}

}  // namespace bertc::ptx
