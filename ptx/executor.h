// Running a PTX kernel on the CPU: the grid's blocks one after another, each block's warps in
// turn, a warp's lanes at one instruction executing it together (lanes a branch parts as groups of
// equal pc, the lowest first, that meet again where their paths join), each warp until its lanes
// wait where threads meet (the block's sixteen named barriers: bar.sync, bar.arrive, bar.red; a
// warp's collectives: shfl.sync, vote.sync, match.sync, bar.warp.sync, ldmatrix, mma), an order
// sm_70's independent thread scheduling allows as any other. The instructions' meaning is
// semantics.cpp's, written from the PTX ISA document.
//
// Addresses: global memory is this process's own (a kernel's pointers are host pointers), and
// every access must fall inside memory the caller registered (add_global) or the module's own
// variables, aligned to its size: otherwise the launch fails naming the kernel, the PTX line, the
// block, the thread and the address (compute-sanitizer's memcheck). Shared and local memory are
// the block's and the thread's own, addressed from 0 in their state spaces, and through windows
// of the generic space (cvta) that no host address falls in.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ptx/approximations.h"
#include "ptx/counters.h"
#include "ptx/global_checks.h"
#include "ptx/launch_limits.h"
#include "ptx/module.h"
#include "ptx/timing.h"

namespace bertc::ptx {

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  uint64_t count() const { return uint64_t{x} * y * z; }
};

struct LaunchConfig {
  Dim3 grid, block;
  uint32_t dynamic_shared_bytes = 0;
  uint64_t seed = 0;  // 0: blocks and a block's warps in index order; else a shuffled order of each
  ArchLimits limits;  // the GPU's: a launch over them is refused as its driver refuses it
  // 0: every block runs. Else at most this many (2 or more), spread evenly over the grid's blocks
  // in index order, the first and the last among them (a tail tile is the last block's), and the
  // counts scaled to the whole grid: a projection's counts of a grid too large to emulate, where
  // every block does the same work but the tails. The other blocks' results are never written.
  uint32_t sample_blocks = 0;
  // initcheck of global memory, where the emulator has a GlobalShadow (check_global_initialization):
  // off for a sampled launch's successors, whose inputs the blocks not run left unwritten.
  bool global_initcheck = true;
  // racecheck of global memory within the launch (global_races.h): off for a sampled launch, whose
  // blocks not run leave nothing to race with.
  bool global_racecheck = true;
  // memcheck by buffer (global_checks.h's BufferBounds): where not empty, the buffers the kernel's
  // arguments name, and every global access must fall inside one of them or the module's own
  // variables, not only inside an allocation (one allocation may hold many buffers).
  std::vector<Buffer> buffers;
  // The GPU's latencies for the timing model (timing.h): each block's critical path in
  // LaunchCounts::block_cycles (alu 0: not timed).
  Latencies latencies;
  // The approximate instructions' results (approximations.h): correctly rounded, or each at the edge
  // of the ISA's error bound in a direction the seed and its sources pick, so that a comparison with
  // a reference proves its tolerances hold for any GPU's approximations.
  ApproxResults approx = ApproxResults::CorrectlyRounded;
  // How many blocks run at once: 1 (or 0), each to its end before the next begins; more, under a
  // seed, that many at a time, their rounds (each warp's quantum) interleaved in a seeded order,
  // as a GPU's multiprocessors run blocks side by side: a kernel whose blocks communicate through
  // global memory then sees another block's work half done.
  uint32_t resident_blocks = 1;
};

// What a launch executed: thread-instructions issued (predicated off or not), by operation and by
// class, and the FLOPs of those executed (counters.h).
struct LaunchCounts {
  uint64_t thread_instructions = 0;
  std::map<Op, uint64_t> by_op;
  std::array<uint64_t, kInstructionClasses> by_class{};
  double flops = 0;
  // Warp requests of ld.shared/st.shared, the wavefronts they took on the banks, and the
  // wavefronts they would take without conflicts (counters.h's shared_wavefronts).
  uint64_t shared_requests = 0, shared_wavefronts = 0, shared_ideal_wavefronts = 0;
  // Warp requests of global memory (ld/st of global or generic addresses that land there, and
  // cp.async's reads), the 32-byte sectors they touched, and the fewest their bytes could take
  // (counters.h's global_sectors).
  uint64_t global_requests = 0, global_sectors = 0, global_ideal_sectors = 0;
  // Thread-instructions executed of shared loads, shared stores, global loads and global stores
  // (by_class's order), by the bytes a lane accesses (counters.h's kAccessWidthBytes).
  std::array<std::array<uint64_t, kAccessWidths>, 4> by_width{};
  // The launch's blocks and warps (a block's threads in warps of 32), and the FLOPs of its mma
  // (part of `flops`): what a projection (projection.h) spreads over a GPU.
  uint64_t blocks = 0, warps = 0;
  double mma_flops = 0;
  // The blocks executed: `blocks`, or fewer where the launch sampled them (sample_blocks), its
  // per-block counts then scaled by blocks / executed_blocks.
  uint64_t executed_blocks = 0;
  // A block's threads and shared bytes (static and dynamic): of one launch; over several added
  // together, the largest.
  uint64_t block_threads = 0, block_shared_bytes = 0;
  // Launches whose global memory passed what racecheck remembers (GlobalRaces' most_bytes): their
  // accesses beyond it went unchecked for races.
  uint64_t global_racecheck_partial = 0;
  // The blocks' critical paths in cycles, added (timing.h; scaled as the other per-block counts
  // where the launch sampled its blocks); 0 where the launch was not timed.
  uint64_t block_cycles = 0;
  LaunchCounts& operator+=(const LaunchCounts& other);
};

class SharedShadow;
class GlobalRaces;

class Emulator {
 public:
  explicit Emulator(Module module);
  ~Emulator();
  Emulator(Emulator&&) noexcept;
  const Module& module() const { return module_; }

  // Memory at `base` a kernel may read and write (a buffer the caller made).
  void add_global(const void* base, uint64_t bytes);
  void clear_globals();
  // initcheck of global memory: a kernel's read of a byte `shadow` says nothing wrote fails the
  // launch; its stores and atomics mark what they write. One shadow for every emulator the
  // caller's memory is shared by (the caller marks its own uploads, fills and copies).
  void check_global_initialization(std::shared_ptr<GlobalShadow> shadow) { global_shadow_ = std::move(shadow); }

  // Runs kernel `name` with its parameters' bytes laid out as the entry's .param list says
  // (Entry::params: each at its offset). Throws ptx::Error naming what went wrong.
  LaunchCounts launch(const std::string& name, const std::vector<uint8_t>& params, const LaunchConfig& config);

  // The parameter bytes of `values` in the entry's order: a pointer or a whole number each,
  // stored little-endian in the parameter's size.
  std::vector<uint8_t> pack_params(const std::string& name, const std::vector<uint64_t>& values) const;

 private:
  Module module_;
  std::map<uint64_t, uint64_t> globals_;  // base -> bytes
  std::vector<std::vector<uint8_t>> storage_;  // the module's .global and .const variables
  std::map<std::string, uint64_t> addresses_;  // their addresses
  std::unique_ptr<SharedShadow> shadow_;       // racecheck's and initcheck's record of shared memory
  std::shared_ptr<GlobalShadow> global_shadow_;  // initcheck's record of global memory (none: unchecked)
  std::unique_ptr<GlobalRaces> races_;           // racecheck's record of a launch's global memory
  friend struct BlockRun;
};

}  // namespace bertc::ptx
