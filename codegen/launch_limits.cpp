// Launch limits per arch (see launch_limits.h).
#include "codegen/launch_limits.h"

#include <fmt/format.h>

#include "passes/targets.h"

namespace bertc::codegen {

LaunchLimits launch_limits(int sm) {
  LaunchLimits l;
  const int arch = sm == 0 ? 61 : sm;
  if (const std::optional<passes::GpuSpec> gpu = passes::gpu_of_sm(arch)) {
    l.gpu = fmt::format("{} (sm_{})", gpu->title, arch);
    l.shared_bytes_per_block = static_cast<int64_t>(gpu->shared_kb_per_block * 1024);
    l.multiprocessors = gpu->multiprocessors;
    l.warps_per_multiprocessor = gpu->max_warps_per_sm;
    l.latency = gpu->latency;
  }
  return l;
}

std::optional<std::string> launch_problem(const KernelSpec& k, int sm) {
  const LaunchLimits l = launch_limits(sm);
  const std::string arch = fmt::format("sm_{}", sm == 0 ? 61 : sm);
  const int64_t threads = int64_t{k.block.x} * k.block.y * k.block.z;
  if (k.block.x < 1 || k.block.y < 1 || k.block.z < 1 || k.grid.x < 1 || k.grid.y < 1 || k.grid.z < 1)
    return fmt::format("its grid ({}, {}, {}) or block ({}, {}, {}) has an empty dimension", k.grid.x, k.grid.y,
                       k.grid.z, k.block.x, k.block.y, k.block.z);
  if (threads > l.threads_per_block)
    return fmt::format("its block of {} threads is over the {} a block may have on {}", threads, l.threads_per_block,
                       arch);
  if (k.block.x > l.block_x || k.block.y > l.block_y || k.block.z > l.block_z)
    return fmt::format("its block ({}, {}, {}) is over ({}, {}, {}), the largest block dimensions on {}", k.block.x,
                       k.block.y, k.block.z, l.block_x, l.block_y, l.block_z, arch);
  if (k.grid.x > l.grid_x || k.grid.y > l.grid_y || k.grid.z > l.grid_z)
    return fmt::format("its grid ({}, {}, {}) is over ({}, {}, {}), the largest grid dimensions on {}", k.grid.x,
                       k.grid.y, k.grid.z, l.grid_x, l.grid_y, l.grid_z, arch);
  return std::nullopt;
}

}  // namespace bertc::codegen
