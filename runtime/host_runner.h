// The Host device with a plan executor on it: a compiled graph run under host emulation, the way
// the GPU runtime runs it (see plan_executor.h). What CI tests of the runtime without a GPU.
#pragma once

#include <filesystem>

#include "runtime/host_device.h"
#include "runtime/plan_executor.h"

namespace bertc::runtime {

class HostRunner {
 public:
  // Compiles `kernels` (rendered from `graph`) for the host, cached under `cache`.
  HostRunner(const ir::Graph& graph, codegen::GraphKernels kernels, const std::filesystem::path& cache,
             Launching launching = Launching::Graph)
      : device_(cache), executor_(graph, std::move(kernels), device_, nullptr, launching) {}

  std::vector<ir::HostTensor<float>> run(ir::Environment<float>& env,
                                                codegen::ThreadOrder order = codegen::ThreadOrder::Forward) {
    device_.set_order(order);
    return executor_.run(env);
  }
  const PlanLayout& layout() const { return executor_.layout(); }
  void set_block_order_seed(std::uint64_t seed) { device_.set_block_order_seed(seed); }

 private:
  HostDevice device_;
  PlanExecutor executor_;
};

}  // namespace bertc::runtime
