// compute-sanitizer's racecheck carried to global memory, within one launch: every byte a launch
// touches remembers its last write and a read (which block and thread, which instruction, and
// when, counted in synchronisation events), so that two accesses of one byte by different
// threads, at least one a write (atomics aside), that nothing orders are a hazard: in one block
// a bar.sync (or bar.warp.sync between a warp's lanes) orders them; across blocks only a fence
// does, in this model: what a block did before a gpu-scope fence is ordered before what another
// block does after a fence of its own that comes later (the "last block" pattern: each block
// stores its sums, fences and counts itself with an atomic; the last one fences and reads them
// all). The model is looser than the PTX memory model there — a fence alone orders nothing
// without the atomic that another block observes — so it catches a missing fence, not a missing
// atomic flag. Launches are ordered by the stream: nothing is remembered from one to the next.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

namespace bertc::ptx {

struct GlobalHazard {
  enum class Kind { ReadAfterWrite, WriteAfterRead, WriteAfterWrite };
  Kind kind;
  uint64_t address = 0;
  uint64_t other_block = 0;   // the other access's block (linear in the grid), thread (linear in
  uint32_t other_thread = 0;  // its block) and instruction
  uint32_t other_pc = 0;
};

class GlobalRaces {
 public:
  // `most_bytes`: how many bytes of memory one launch's accesses are remembered for (each costs
  // 32 bytes of host memory); accesses beyond go unchecked and covered() says so.
  explicit GlobalRaces(uint64_t most_bytes = uint64_t{64} << 20) : most_pages_(most_bytes / kPage) {}

  // A launch begins: every earlier access forgotten.
  void begin_launch();
  // Block `block` (linear in the grid) of `warps` warps begins.
  void begin_block(uint64_t block, uint32_t warps);
  void barrier() { block_barrier_ = ++clock_; }                     // bar.sync of the block
  void warp_sync(uint32_t warp) { warp_barrier_.at(warp) = ++clock_; }  // bar.warp.sync of a warp
  void fence();  // a gpu-scope (or wider) fence by a thread of the block

  // The bytes [at, at + n) read or written by `thread` (linear in the block) at instruction `pc`:
  // the first hazard with an earlier access, nothing when none. Recorded either way.
  std::optional<GlobalHazard> read(uint32_t thread, uint32_t pc, uint64_t at, uint64_t n);
  std::optional<GlobalHazard> write(uint32_t thread, uint32_t pc, uint64_t at, uint64_t n);

  // Whether every access of the launch so far was remembered (false: its memory passed most_bytes).
  bool covered() const { return covered_; }

 private:
  static constexpr uint64_t kPage = 4096;
  struct Stamp {
    uint32_t block = 0, thread = 0;  // the block (linear in the grid) and thread + 1; thread 0: no access
    uint32_t pc = 0, time = 0;
    bool operator==(const Stamp&) const = default;
  };
  struct Cell {
    Stamp write, read;
  };
  Cell* cell(uint64_t address);
  template <typename Fresh, typename Same>
  void each_byte(uint64_t at, uint64_t n, Fresh fresh, Same same);
  bool ordered(const Stamp& earlier, const Stamp& now) const;
  GlobalHazard hazard(GlobalHazard::Kind kind, uint64_t address, const Stamp& other) const;

  uint64_t most_pages_;
  uint32_t block_ = 0;
  uint32_t clock_ = 0, block_barrier_ = 0, acquired_ = 0;
  std::vector<uint32_t> warp_barrier_;
  std::unordered_map<uint64_t, uint32_t> released_;  // block -> the time of its last fence
  std::unordered_map<uint64_t, std::unique_ptr<Cell[]>> pages_;
  uint64_t last_page_ = ~uint64_t{0};
  Cell* last_cells_ = nullptr;
  bool covered_ = true;
};

}  // namespace bertc::ptx
