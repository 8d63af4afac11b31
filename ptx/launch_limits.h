// What a CUDA driver refuses at launch, by the limits of the GPU's arch (threads and shape of a
// block, the grid's shape, shared memory, registers), and the block's shared-memory layout the
// limits are checked against. The caller gives the arch's figures (the GPU table is not this
// folder's: passes/targets.h); an over-limit launch is refused as the driver would refuse it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ptx/module.h"

namespace bertc::ptx {

// `n` rounded up to a multiple of `a` (a variable's offset at its alignment, registers per warp).
uint64_t align_up(uint64_t n, uint64_t a);

struct ArchLimits {
  std::string gpu = "a GPU";                 // for messages: "Tesla P40 (sm_61)"
  uint64_t max_shared_bytes = 48 << 10;      // per block, static and dynamic together (opt-in maximum)
  uint32_t registers_per_block = 64 << 10;   // a block's threads' registers together
  uint32_t kernel_registers = 0;             // per thread, as ptxas allocated them (0: not known, not checked)
  // The GPU's multiprocessors and warps a multiprocessor holds: %nsmid, %smid (a block's on the
  // multiprocessor its index modulo their number would take) and %nwarpid (0: not known, and a
  // kernel reading them fails naming the register).
  uint32_t multiprocessors = 0, warps_per_multiprocessor = 0;
};

// A block's shared variables at their offsets (the module's, then the entry's, each at its
// alignment; an unsized extern array takes the launch's dynamic bytes).
struct SharedLayout {
  std::map<std::string, uint64_t> offsets;
  uint64_t static_bytes = 0, total_bytes = 0;
  std::vector<std::pair<uint64_t, uint64_t>> extents;  // each variable's [offset, offset + bytes): not its padding
};
SharedLayout lay_out_shared(const Module& module, const Entry& entry, uint64_t dynamic_bytes);

// The most registers a thread of `entry` may have under its launch bounds, where no cubin gives
// ptxas's count: .maxnreg, else what .maxntid's threads in .minnctapersm blocks (1 where not
// given) leave of a multiprocessor's `registers` (allocated 8 a thread, 256 a warp; at most 255,
// the ISA's most), the bound ptxas compiles under; 0 where the entry gives neither.
uint32_t launch_bounds_registers(const Entry& entry, uint32_t registers);

// Throws ptx::Error naming the kernel, the limit and the figures when a launch of `entry` with a
// block of `threads` (`block_x` x `block_y` x `block_z`) in a grid of `grid_x` x `grid_y` x
// `grid_z`, and `shared`, exceeds `limits`: what cuLaunchKernel answers with
// CUDA_ERROR_INVALID_VALUE (shapes, shared memory) or CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
// (registers).
void check_launch_limits(const Entry& entry, const uint32_t block[3], const uint32_t grid[3],
                         const SharedLayout& shared, const ArchLimits& limits);

}  // namespace bertc::ptx
