// The launch configurations a GPU accepts, checked where kernels are launched (the Host device's
// emulation, which would otherwise run any shape, and the CUDA device, whose driver would answer
// a bare CUDA_ERROR_INVALID_VALUE): every arch bertc targets (sm_61 to sm_90) shares them
// (CUDA C++ Programming Guide, "Technical Specifications per Compute Capability").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "codegen/kernel.h"
#include "passes/targets.h"

namespace bertc::codegen {

struct LaunchLimits {
  int64_t threads_per_block = 1024;
  int64_t block_x = 1024, block_y = 1024, block_z = 64;
  int64_t grid_x = 2147483647, grid_y = 65535, grid_z = 65535;
  int64_t registers_per_block = 65536;
  // What differs by GPU, from the GPU table (passes/targets.h): the first GPU of the arch.
  std::string gpu = "a GPU";                   // "Tesla P40 (sm_61)", for messages
  int64_t shared_bytes_per_block = 48 << 10;  // static and dynamic together, the opt-in maximum
  int64_t multiprocessors = 0, warps_per_multiprocessor = 0;  // (0: no GPU of the arch in the table)
  passes::CycleLatencies latency{};  // its latencies, for the PTX emulator's timing (0: none in the table)
};

// The limits of sm_`sm` (the shapes the same for every arch bertc targets; sm 0: the host
// emulation's sm_61).
LaunchLimits launch_limits(int sm);

// What is wrong with `k`'s launch on sm_`sm` ("its block of 2048 threads is over the 1024 a block
// may have on sm_80"), or nullopt when a GPU of that arch takes it.
std::optional<std::string> launch_problem(const KernelSpec& k, int sm);

}  // namespace bertc::codegen
