// compute-sanitizer's racecheck and initcheck for shared memory: every byte of a block's shared
// memory remembers its last write and its latest reads (which thread, which instruction, and the
// synchronisation epoch they happened in), so that an access another thread made with no barrier
// (bar.sync for the block, a warp collective for a warp's lanes) between them is a hazard, and a
// read of a byte no thread of the block wrote is a read of uninitialised memory.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace bertc::ptx {

struct SharedHazard {
  enum class Kind { ReadAfterWrite, WriteAfterRead, WriteAfterWrite, Uninitialised };
  Kind kind;
  uint64_t offset = 0;          // the byte of shared memory
  uint32_t other_thread = 0;    // the other access's thread (linear in the block) and instruction
  uint32_t other_pc = 0;
};

class SharedShadow {
 public:
  // A block begins: `bytes` of shared memory, none written, threads of `warps` warps. `extents`:
  // the variables' bytes ([begin, end)); the rest is alignment padding, which initcheck passes over:
  // a compiler widens loads into it (three floats of a 16-byte-aligned array read as one ld.v4,
  // the fourth unused), and no correct kernel keeps anything there.
  void begin_block(uint64_t bytes, uint32_t warps, const std::vector<std::pair<uint64_t, uint64_t>>& extents);
  // bar.sync of the whole block: every access before it is ordered before every access after.
  void barrier() { ++epoch_; }
  // A warp collective (shfl.sync, bar.warp.sync, mma, ldmatrix): the accesses of warp `warp`'s
  // lanes before it are ordered before theirs after it.
  void warp_sync(uint32_t warp) { ++warp_epoch_.at(warp); }
  // The bytes [offset, offset + n) read or written by `thread` (linear in the block) at
  // instruction `pc`: the first hazard with an earlier access, or a read of a byte never written
  // in this block; nothing when none. Recorded either way.
  std::optional<SharedHazard> read(uint32_t thread, uint32_t pc, uint64_t offset, uint64_t n);
  std::optional<SharedHazard> write(uint32_t thread, uint32_t pc, uint64_t offset, uint64_t n);
  // An atomic's read and write of the bytes (atom, red): a byte never written in this block is
  // initcheck's (an uninitialised counter), and a plain access of another thread that nothing
  // orders is a hazard either way (the PTX memory model's data race between a strong and a weak
  // access); other threads' atomics are not.
  std::optional<SharedHazard> atomic(uint32_t thread, uint32_t pc, uint64_t offset, uint64_t n);

 private:
  // An access: its thread and instruction, the block epoch and its warp's epoch then. Epochs count
  // up across blocks and launches, so that what an earlier block left is ordered before anything.
  struct Stamp {
    uint32_t thread = 0, pc = 0, epoch = 0, warp_epoch = 0;
  };
  struct Cell {
    Stamp write, read, other_read;  // (two readers kept: a hazard with either is found)
  };
  // The last atomic's and another thread's before it, unordered with it (with which other atomics
  // do not race, plain accesses do: kept two, as readers are). Apart from Cell, and looked at only
  // in a block that has run an atomic: most kernels have none, and every plain access of theirs
  // would pay for them (a third more time in `bertc check` when they were in Cell).
  struct AtomicCell {
    Stamp atomic, other_atomic;
  };
  // Whether byte `b` was written in this block, by a store or an atomic.
  bool written(const Cell& c, uint64_t b) const {
    return c.write.epoch >= block_start_ || (atomics_in_block_ && atomic_cells_[b].atomic.epoch >= block_start_);
  }
  // Whether `earlier` happened before what `thread` does now: the same thread (program order), a
  // block barrier since, or a collective of their one warp since.
  bool ordered(const Stamp& earlier, uint32_t thread) const {
    if (earlier.epoch == 0 || earlier.thread == thread || earlier.epoch < epoch_) return true;
    return earlier.thread / 32 == thread / 32 && earlier.warp_epoch < warp_epoch_[thread / 32];
  }
  Stamp stamp(uint32_t thread, uint32_t pc) const;

  std::vector<Cell> cells_;
  std::vector<AtomicCell> atomic_cells_;  // (sized at a block's first atomic)
  bool atomics_in_block_ = false;
  std::vector<bool> declared_;  // per byte: inside a variable (initcheck's domain)
  std::vector<uint32_t> warp_epoch_;
  uint32_t epoch_ = 1, block_start_ = 1;
};

}  // namespace bertc::ptx
