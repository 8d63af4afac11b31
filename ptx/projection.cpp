// Projected launch times from the emulator's counts (see projection.h).
#include "ptx/projection.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace bertc::ptx {

std::string_view bound_name(Bound b) {
  switch (b) {
    case Bound::Issue: return "issue";
    case Bound::Simt: return "simt";
    case Bound::Mma: return "mma";
    case Bound::Memory: return "memory";
    case Bound::Latency: return "latency";
  }
  return "?";
}

Occupancy occupancy(uint64_t block_threads, uint64_t block_shared_bytes, uint32_t registers_per_thread,
                    const GpuRates& gpu) {
  const uint64_t warps = std::max<uint64_t>(1, (block_threads + 31) / 32);
  std::pair<uint64_t, std::string_view> bounds[] = {
      {gpu.max_warps / warps, "warps"},
      {gpu.max_blocks, "blocks"},
      {block_shared_bytes ? gpu.shared_bytes / block_shared_bytes : gpu.max_blocks, "shared memory"},
      {gpu.max_blocks, "registers"},
  };
  if (registers_per_thread > 0) {
    const uint64_t per_warp = (uint64_t{registers_per_thread} * 32 + 255) / 256 * 256;  // (allocated 256 at a time)
    bounds[3].first = gpu.registers / (per_warp * warps);
  }
  const auto least = std::min_element(std::begin(bounds), std::end(bounds),
                                      [](const auto& a, const auto& b) { return a.first < b.first; });
  Occupancy o;
  o.blocks = static_cast<uint32_t>(least->first);
  o.warps_share = static_cast<double>(o.blocks * warps) / gpu.max_warps;
  o.limit = least->second;
  return o;
}

Projection project(const LaunchCounts& c, const GpuRates& gpu, uint32_t registers_per_thread) {
  if (gpu.multiprocessors <= 0 || gpu.clock_ghz <= 0 || gpu.simt_tflops <= 0 || gpu.bandwidth_gbs <= 0 ||
      gpu.issue_per_clock <= 0)
    throw std::invalid_argument(fmt::format("{}: rates must be positive to project on", gpu.name));
  if (c.mma_flops > 0 && gpu.mma_tflops <= 0)
    throw std::invalid_argument(fmt::format("{} has no tensor cores, and the launch ran mma", gpu.name));
  Projection p;
  const double sms = gpu.multiprocessors;
  p.issue_seconds = static_cast<double>(c.thread_instructions) / 32 / (sms * gpu.issue_per_clock * gpu.clock_ghz * 1e9);
  p.simt_seconds = (c.flops - c.mma_flops) / (gpu.simt_tflops * 1e12);
  p.mma_seconds = c.mma_flops > 0 ? c.mma_flops / (gpu.mma_tflops * 1e12) : 0;
  p.memory_seconds = static_cast<double>(c.global_sectors) * 32 / (gpu.bandwidth_gbs * 1e9);
  // (a grid of fewer blocks than multiprocessors leaves the rest idle: its work runs on those it has)
  p.fill = c.blocks == 0 ? 1 : std::min(1.0, static_cast<double>(c.blocks) / sms);
  const std::pair<double, Bound> parts[] = {{p.issue_seconds, Bound::Issue},
                                            {p.simt_seconds, Bound::Simt},
                                            {p.mma_seconds, Bound::Mma},
                                            {p.memory_seconds, Bound::Memory}};
  const auto slowest = std::max_element(std::begin(parts), std::end(parts),
                                        [](const auto& a, const auto& b) { return a.first < b.first; });
  p.bound = slowest->second;
  p.seconds = slowest->first / p.fill;
  if (c.block_cycles > 0 && c.blocks > 0) {
    // (a multiprocessor runs the blocks it holds side by side, each along its critical path: a grid
    // takes as many such waves as its blocks fill; a block that fits none is counted as one)
    const Occupancy o = occupancy(c.block_threads, c.block_shared_bytes, registers_per_thread, gpu);
    const double at_once = sms * std::max<uint32_t>(1, o.blocks);
    const double waves = std::ceil(static_cast<double>(c.blocks) / at_once);
    const double mean_cycles = static_cast<double>(c.block_cycles) / static_cast<double>(c.blocks);
    p.latency_seconds = waves * mean_cycles / (gpu.clock_ghz * 1e9);
    if (p.latency_seconds > p.seconds) p.seconds = p.latency_seconds, p.bound = Bound::Latency;
  }
  p.seconds += gpu.launch_seconds;
  return p;
}

}  // namespace bertc::ptx
