// What a device whose kernels run on the PTX emulator lets a caller set and read (bertc check's
// --sample-blocks, --schedule-seed, --resident-blocks, --approx, and the counts it prints), asked
// through Device::emulator_controls() rather than by the device's type or name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ptx/approximations.h"
#include "ptx/executor.h"

namespace bertc::runtime {

// One launch on the emulator and what it executed.
struct PtxLaunchRecord {
  std::string kernel;
  std::string label;   // the op it runs (its scope)
  std::string family;  // its kernel family ("matmul", "row", ...)
  size_t op_index = 0;     // the op of its graph it runs (KernelSpec::op_index)
  uint32_t registers = 0;  // per thread, as ptxas allocates them for the arch (0: not known)
  // Where `registers` is not known: the most the kernel's launch bounds allow it (0: none given;
  // ptx/launch_limits.h's launch_bounds_registers).
  uint32_t register_bound = 0;
  ptx::LaunchCounts counts;
  // Sampled launches only: the kernel ran before with this grid, and its counts are that launch's
  // (the launch itself ran nothing). A kernel's name is its source's hash, shapes included.
  bool repeat = false;
};

// What a device's launches executed, counted by the PTX emulator: the PTX device's, or a driver's
// that runs its kernels there (bertc's emulated CUDA driver, through the CUDA device).
class CountedLaunches {
 public:
  virtual ~CountedLaunches() = default;
  // Every launch so far, in the order they ran (the PTX device's: the first of them, a bounded
  // number; a driver's: those run since the first call).
  virtual const std::vector<PtxLaunchRecord>& launches() const = 0;
  // Whether the register counts are ptxas's (an NVRTC made cubins for the arch).
  virtual bool registers_known() const = 0;
};

class EmulatorControls : public CountedLaunches {
 public:
  // Counting only: every launch from now on runs at most `blocks` of its blocks (0: every block).
  virtual void sample_blocks(uint32_t blocks) = 0;
  // How the approximate instructions' results are made from now on (ptx/approximations.h).
  virtual void approximations(ptx::ApproxResults results) = 0;
  // The schedule's seed from now on (0: index order).
  virtual void schedule_seed(uint64_t seed) = 0;
  // How many blocks of a launch run side by side under a seed.
  virtual void resident_blocks(uint32_t blocks) = 0;
};

}  // namespace bertc::runtime
