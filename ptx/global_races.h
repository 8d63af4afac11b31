// compute-sanitizer's racecheck carried to global memory, within one launch: every byte a launch
// touches remembers its last write and a read (which block and thread, which instruction, and
// when, counted in synchronisation events), so that two accesses of one byte by different
// threads, at least one a write (atomics aside), that nothing orders are a hazard: in one block
// a bar.sync (or bar.warp.sync between a warp's lanes) orders them; across blocks only a fence
// does, in this model: what a block did before a gpu-scope fence is ordered before what another
// block does after a fence of its own that comes later (the "last block" pattern: each block
// stores its sums, fences and counts itself with an atomic; the last one fences and reads them
// all). Blocks may interleave (LaunchConfig::resident_blocks): each keeps its own barriers and
// fences, and a block's access is ordered before another's by any fence of its block after the
// access and before the other's latest fence. The model is looser than the PTX memory model there — a fence alone orders nothing
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
  // Block `block` (linear in the grid) of `warps` warps begins; what follows is its, until another
  // begins or resume_block names another running block.
  void begin_block(uint64_t block, uint32_t warps);
  void resume_block(uint64_t block);
  // Block `block` ended: its barriers are let go (its fences stay: they order its accesses).
  void end_block(uint64_t block);
  void barrier() { current_->block_barrier = ++clock_; }                     // bar.sync of the block
  void warp_sync(uint32_t warp) { current_->warp_barrier.at(warp) = ++clock_; }  // bar.warp.sync of a warp
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

  // A running block's: the time of its last bar.sync, of its last fence, of each warp's last
  // bar.warp.sync.
  struct Running {
    uint32_t block_barrier = 0, acquired = 0;
    std::vector<uint32_t> warp_barrier;
  };

  uint64_t most_pages_;
  uint32_t block_ = 0;
  uint32_t clock_ = 0;
  std::unordered_map<uint32_t, Running> running_;  // (a node's address stays while others come and go)
  Running* current_ = nullptr;
  std::unordered_map<uint64_t, std::vector<uint32_t>> released_;  // block -> the times of its fences, rising
  std::unordered_map<uint64_t, std::unique_ptr<Cell[]>> pages_;
  uint64_t last_page_ = ~uint64_t{0};
  Cell* last_cells_ = nullptr;
  bool covered_ = true;
};

}  // namespace bertc::ptx
