// A projected time for a launch the emulator counted, on a GPU it never ran on: each part of the
// counted work at the GPU's datasheet rate, and the blocks' critical paths (timing.h) in the waves
// the multiprocessors hold them in, the slowest part setting the time. A projection from counts,
// never a measurement; it models no cache (every sector is DRAM traffic: an upper bound on memory
// time where tiles are re-read from L2, and every global load at DRAM latency), and issue as
// thread-instructions / 32 (a lower bound under divergence).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ptx/executor.h"

namespace bertc::ptx {

// The rates of one GPU (the caller fills them from its GPU table: ptx/ reads no table of its own).
struct GpuRates {
  std::string name;            // "Tesla P40"
  int multiprocessors = 0;
  double clock_ghz = 0;        // boost clock
  int issue_per_clock = 4;     // warp-instructions a multiprocessor issues a clock (four schedulers, sm_61-sm_90)
  double simt_tflops = 0;      // FP32 FMA peak; packed f16/bf16 SIMT math is counted at this rate
  double mma_tflops = 0;       // tensor-core peak for the products' type (0: no tensor cores)
  double bandwidth_gbs = 0;    // DRAM
  double launch_seconds = 0;   // a launch's fixed cost (the cost model's)
  // What a multiprocessor holds at once: warps, blocks, registers, shared bytes.
  uint32_t max_warps = 64, max_blocks = 32, registers = 64 << 10;
  uint64_t shared_bytes = 96 << 10;
};

// How many of a launch's blocks one multiprocessor holds at once, and the share of its warps they
// fill, from the block's threads and shared bytes and, where known (not 0), its threads'
// registers (ptxas's count, allocated 256 a warp at a time); `limit` names what bounds it
// ("warps", "blocks", "shared memory", "registers"). A block that fits none is 0 blocks.
struct Occupancy {
  uint32_t blocks = 0;
  double warps_share = 0;
  std::string_view limit;
};
Occupancy occupancy(uint64_t block_threads, uint64_t block_shared_bytes, uint32_t registers_per_thread,
                    const GpuRates& gpu);

enum class Bound { Issue, Simt, Mma, Memory, Latency };
std::string_view bound_name(Bound b);  // "issue", "simt", "mma", "memory", "latency"

struct Projection {
  double issue_seconds = 0, simt_seconds = 0, mma_seconds = 0, memory_seconds = 0;
  // The blocks' mean critical path times the waves of blocks the multiprocessors hold at once
  // (occupancy), at the clock: 0 where the launch was not timed (LaunchConfig::latencies).
  double latency_seconds = 0;
  double fill = 1;      // the share of multiprocessors the grid's blocks can keep busy (1 from one block each)
  // max(the slowest throughput part / fill, latency_seconds) + launch_seconds
  double seconds = 0;
  Bound bound = Bound::Issue;
};

// `registers_per_thread`: ptxas's count where known (0: occupancy from threads and shared memory).
// Throws std::invalid_argument for counts with mma FLOPs on a GPU without tensor cores, or rates
// that are not positive.
Projection project(const LaunchCounts& counts, const GpuRates& gpu, uint32_t registers_per_thread = 0);

}  // namespace bertc::ptx
