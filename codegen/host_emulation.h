// Runs kernels compiled for the host (prelude bx_host.h) as a GPU would: blocks one after
// another in a shuffled order (a GPU promises none), the threads of a block as fibers on this OS thread, switching only at barriers and
// warp shuffles. __syncthreads is a real block barrier, shuffles exchange values among the 32
// lanes of a warp, shared memory is per block and starts poisoned (all bits set: NaN), so a
// kernel that reads before writing, or misses a barrier, shows it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "codegen/prelude/bx_host_abi.h"

namespace bertc::codegen {

struct Dim3 {
  int x = 1, y = 1, z = 1;
  long long count() const { return static_cast<long long>(x) * y * z; }
};

// The order in which a block's threads run between switches. A kernel that is right runs the
// same under both; one that misses a barrier usually does not.
enum class ThreadOrder { Forward, Reverse };

struct HostLaunch {
  Dim3 grid, block;
  // False for kernels without barriers or shuffles: their threads run as plain calls (fast).
  bool cooperative = true;
  ThreadOrder order = ThreadOrder::Forward;
  // 0: blocks in grid order; else the seed of a random block order, drawn anew for each launch.
  // A kernel whose result depends on the order its blocks run in (float atomics from several
  // blocks, a block reading what another writes) gives different bits under different seeds.
  std::uint64_t block_order_seed = 0;
};

// A kernel's host entry: unpacks the argument pointers and calls the kernel.
using HostEntry = void (*)(void** args);

class EmulationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class HostEmulator {
 public:
  HostEmulator();
  ~HostEmulator();
  HostEmulator(const HostEmulator&) = delete;
  HostEmulator& operator=(const HostEmulator&) = delete;

  // The table a kernel library's bx_install() receives.
  bx_host_api* api();

  // Runs the kernel over the grid. Throws EmulationError on a barrier not every thread of the
  // block reaches, or a barrier or shuffle in a launch declared not cooperative; `kernel` names it.
  void launch(const std::string& kernel, HostEntry entry, void** args, const HostLaunch& launch);

  struct Scheduler;

 private:
  std::unique_ptr<Scheduler> scheduler_;
};

}  // namespace bertc::codegen
