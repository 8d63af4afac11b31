// The GPU the emulated CUDA driver pretends to be: one of bertc's GPU table (passes/targets.h),
// chosen by BERTC_EMULATED_GPU (p40, v100, a100, h200, or any other name of the table), with its
// memory optionally made smaller by BERTC_EMULATED_GPU_MEMORY_MB (an emulated allocation is host
// memory: a test sizes the device to what this machine has, and --batch-size auto to what it plans).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace bertc::cuda_emulation {

struct GpuProfile {
  std::string key;    // "p40"
  std::string title;  // "Tesla P40"
  int sm = 0;         // 61
  int multiprocessors = 0;
  uint64_t memory_bytes = 0;
  uint32_t shared_bytes_per_block = 48 << 10;         // without opting in
  uint32_t shared_bytes_per_block_optin = 48 << 10;   // the most a block may have
  uint32_t shared_bytes_per_multiprocessor = 0;
  uint32_t threads_per_multiprocessor = 0;
  uint32_t registers_per_block = 64 << 10;
  int clock_khz = 0;
};

// The profile the environment asks for; nullopt with `why` set (the variable missing, or naming no
// GPU of the table: the choices listed) when it asks for none.
std::optional<GpuProfile> profile_from_environment(std::string* why);

// The profile of GPU `key` of the table; nullopt where the table has none of that name.
std::optional<GpuProfile> profile_of(const std::string& key);

}  // namespace bertc::cuda_emulation
