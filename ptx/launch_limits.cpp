// Launch limits as the driver applies them (launch_limits.h), from the CUDA programming guide's
// table of compute-capability limits: every arch from sm_61 to sm_90 has the same shape limits.
#include "ptx/launch_limits.h"

#include <algorithm>

#include <fmt/format.h>

namespace bertc::ptx {
uint64_t align_up(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

SharedLayout lay_out_shared(const Module& module, const Entry& entry, uint64_t dynamic_bytes) {
  SharedLayout out;
  bool dynamic = false;
  auto place = [&](const Variable& v) {
    out.total_bytes = align_up(out.total_bytes, static_cast<uint64_t>(v.align));
    out.offsets[v.name] = out.total_bytes;
    out.extents.emplace_back(out.total_bytes, out.total_bytes + (v.bytes == 0 ? dynamic_bytes : v.bytes));
    if (v.bytes == 0) dynamic = true;  // ([]: sized at launch)
    out.total_bytes += v.bytes == 0 ? dynamic_bytes : v.bytes;
    if (v.bytes != 0) out.static_bytes = out.total_bytes;
  };
  for (const Variable& v : module.variables)
    if (v.space == Space::Shared) place(v);
  for (const Variable& v : entry.variables)
    if (v.space == Space::Shared) place(v);
  if (!dynamic) out.static_bytes = out.total_bytes;
  return out;
}

void check_launch_limits(const Entry& entry, const uint32_t block[3], const uint32_t grid[3],
                         const SharedLayout& shared, const ArchLimits& limits) {
  auto refuse = [&](const std::string& what) {
    throw Error(fmt::format("kernel {}: a launch {} refuses: {}", entry.name, limits.gpu, what));
  };
  const uint64_t threads = uint64_t{block[0]} * block[1] * block[2];
  if (threads == 0 || grid[0] == 0 || grid[1] == 0 || grid[2] == 0)
    refuse(fmt::format("an empty block or grid ({}x{}x{} blocks of {}x{}x{} threads)", grid[0], grid[1], grid[2],
                       block[0], block[1], block[2]));
  if (threads > 1024 || block[0] > 1024 || block[1] > 1024 || block[2] > 64)
    refuse(fmt::format("a block of {}x{}x{} threads, and a block holds 1024 at most (x and y up to 1024, z up to 64)",
                       block[0], block[1], block[2]));
  if (grid[0] > 0x7fffffffu || grid[1] > 65535 || grid[2] > 65535)
    refuse(fmt::format("a grid of {}x{}x{} blocks, and a grid is at most 2^31-1 x 65535 x 65535", grid[0], grid[1],
                       grid[2]));
  if (shared.static_bytes > (48u << 10))
    refuse(fmt::format("{} bytes of static shared memory, and a kernel's static shared memory is 48 KiB at most "
                       "(more only as dynamic shared memory, opted in)",
                       shared.static_bytes));
  if (shared.total_bytes > limits.max_shared_bytes)
    refuse(fmt::format("{} bytes of shared memory a block, and a block on it may use {} at most", shared.total_bytes,
                       limits.max_shared_bytes));
  if (limits.kernel_registers > 0) {
    // (registers are allocated per warp, in units of 256)
    const uint64_t per_warp = align_up(uint64_t{limits.kernel_registers} * 32, 256);
    const uint64_t needed = per_warp * ((threads + 31) / 32);
    if (needed > limits.registers_per_block)
      refuse(fmt::format("{} registers a thread x {} threads = {} registers a block, more than its {} (out of "
                         "resources)",
                         limits.kernel_registers, threads, needed, limits.registers_per_block));
  }
}

uint32_t launch_bounds_registers(const Entry& entry, uint32_t registers) {
  if (entry.maxnreg > 0) return static_cast<uint32_t>(std::min(entry.maxnreg, 255));
  const uint64_t threads = uint64_t{static_cast<uint32_t>(std::max(entry.maxntid[0], 0))} *
                           static_cast<uint32_t>(std::max(entry.maxntid[1], 1)) *
                           static_cast<uint32_t>(std::max(entry.maxntid[2], 1));
  if (entry.maxntid[0] <= 0 || threads == 0) return 0;
  const uint64_t blocks = static_cast<uint64_t>(std::max(entry.minnctapersm, 1));
  const uint64_t per_thread = registers / (align_up(threads, 32) * blocks) / 8 * 8;
  return static_cast<uint32_t>(std::min<uint64_t>(per_thread, 255));
}

}  // namespace bertc::ptx
