// The kernel harness: renders every kernel of a graph, compiles them for the host, runs each
// under host emulation on the reference executor's values of its inputs, and compares what it
// writes with the reference's values of its outputs. Written buffers start poisoned (NaN) and
// sit between canaries; inputs must come back unchanged. Reusable by a host runtime later.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "codegen/host_compile.h"
#include "codegen/kernel.h"
#include "codegen/matrix_strategy.h"
#include "reference/executor.h"

namespace bertc::testing {

// Allowed difference per element: abs_of_max * max|reference| over the tensor + rel * |reference|.
struct Tolerance {
  double abs_of_max, rel;
};

// The tolerance for a result dtype (explained in harness.cpp).
Tolerance tolerance_for(ir::DType dtype);

struct KernelCheck {
  std::string kernel, family, label;
  bool ok = true;
  double worst = 0;      // largest error as a fraction of what was allowed (<= 1 passes)
  std::string problem;   // the first failure, readably
};

// Memory a launch may read and write: a buffer's bytes (between its canaries), a table, scratch.
// `written`: the harness wrote it before the launch (an input's values, a buffer the launch expects
// zeroed, a table, scratch); not a result's poison or the workspace's (a GPU's leftovers there).
struct LaunchMemory {
  void* base;
  size_t bytes;
  bool written;
};
// A launch run by other means than host emulation (the PTX emulator): the kernel, its arguments
// as host emulation takes them (pointers, and integers as pointer-sized values), and its memory.
using Launcher = std::function<void(const codegen::KernelSpec&, const std::vector<void*>& args,
                                    const std::vector<LaunchMemory>& memory, codegen::ThreadOrder)>;

class KernelHarness {
 public:
  // Renders `graph`'s kernels as for `target` and compiles them for the host (cached under `cache`).
  KernelHarness(const ir::Graph& graph, const std::filesystem::path& cache, codegen::RenderTarget target = {});
  // Takes `kernels` as given (a test may have broken one on purpose).
  KernelHarness(const ir::Graph& graph, codegen::GraphKernels kernels, const std::filesystem::path& cache);
  // Runs `kernels` with `launcher` instead of host emulation (nothing is compiled for the host).
  KernelHarness(const ir::Graph& graph, codegen::GraphKernels kernels, Launcher launcher);

  const codegen::GraphKernels& kernels() const { return kernels_; }

  // Runs the reference on `env` (inputs, params, states) once, then every kernel in `order` (those
  // `only` takes, when given).
  std::vector<KernelCheck> check_all(ir::Environment<float> env, codegen::ThreadOrder order,
                                     const std::function<bool(const codegen::KernelSpec&)>& only = {});

  // Runs one kernel on the reference values `values` (indexed by ValueId).
  KernelCheck check(const codegen::KernelSpec& kernel, const std::vector<ir::HostTensor<float>>& values,
                    codegen::ThreadOrder order);

 private:
  const ir::Graph& graph_;
  codegen::GraphKernels kernels_;
  codegen::HostEmulator emulator_;
  std::unique_ptr<codegen::HostKernelLibrary> library_;
  Launcher launcher_;
};

}  // namespace bertc::testing
