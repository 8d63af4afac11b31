// The emulated GPU's figures, from bertc's GPU table (see gpu_profile.h).
#include "cuda_emulation/gpu_profile.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "passes/targets.h"

namespace bertc::cuda_emulation {

std::optional<GpuProfile> profile_of(const std::string& key) {
  for (const passes::GpuSpec& g : passes::gpu_specs()) {
    if (g.name != key) continue;
    GpuProfile p;
    p.key = std::string(g.name);
    p.title = std::string(g.title);
    p.sm = g.arch;
    p.multiprocessors = g.multiprocessors;
    p.memory_bytes = static_cast<uint64_t>(g.memory_gb * 1e9);
    p.shared_bytes_per_block_optin = static_cast<uint32_t>(g.shared_kb_per_block * 1024);
    p.shared_bytes_per_block = std::min<uint32_t>(48 << 10, p.shared_bytes_per_block_optin);
    p.shared_bytes_per_multiprocessor = static_cast<uint32_t>(g.shared_kb_per_sm * 1024);
    p.threads_per_multiprocessor = static_cast<uint32_t>(g.max_warps_per_sm * 32);
    p.clock_khz = static_cast<int>(std::lround(g.clock_ghz() * 1e6));
    return p;
  }
  return std::nullopt;
}

std::optional<GpuProfile> profile_from_environment(std::string* why) {
  std::vector<std::string> names;
  for (const passes::GpuSpec& g : passes::gpu_specs()) names.emplace_back(g.name);
  const char* key = std::getenv("BERTC_EMULATED_GPU");
  if (!key || !*key) {
    *why = fmt::format("bertc's emulated CUDA driver needs BERTC_EMULATED_GPU, the GPU it is to be: one of {}",
                       fmt::join(names, ", "));
    return std::nullopt;
  }
  std::optional<GpuProfile> p = profile_of(key);
  if (!p) {
    *why = fmt::format("BERTC_EMULATED_GPU={} is no GPU of bertc's table: one of {}", key, fmt::join(names, ", "));
    return std::nullopt;
  }
  if (const char* mb = std::getenv("BERTC_EMULATED_GPU_MEMORY_MB"); mb && *mb) {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(mb, &end, 10);
    if (*end != '\0' || n == 0) {
      *why = fmt::format("BERTC_EMULATED_GPU_MEMORY_MB={} is not a positive number of MiB", mb);
      return std::nullopt;
    }
    p->memory_bytes = std::min<uint64_t>(p->memory_bytes, static_cast<uint64_t>(n) << 20);
  }
  return p;
}

}  // namespace bertc::cuda_emulation
