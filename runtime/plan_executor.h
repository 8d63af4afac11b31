// Running a compiled graph on a Device the way every device runs it: every value where the
// memory plan puts it (PlanLayout: one arena; inputs, params, states and constants apart), the
// rendered launches in order with the buffers, pointer tables, scratch (zeroed once, per launch)
// and workspace their records name, cuBLAS records before their epilogue kernels. The Host
// device runs it in CI against the reference executor; the CUDA device runs the same code.
#pragma once

#include <vector>

#include "codegen/kernel.h"
#include "runtime/device.h"
#include "runtime/plan_layout.h"
#include "runtime/reference/host_tensor.h"

namespace bertc::runtime {

class PlanExecutor {
 public:
  // Allocates everything on `device` and loads the kernels; `device` must outlive the executor.
  PlanExecutor(const ir::Graph& graph, codegen::GraphKernels kernels, Device& device);

  // As reference::Executor::run: uploads inputs, params and states from `env` by name, runs every
  // launch, downloads the updates' values into `env` and returns the graph's outputs.
  std::vector<reference::HostTensor<float>> run(reference::Environment<float>& env);

  const PlanLayout& layout() const { return layout_; }

 private:
  void* address(ir::ValueId v);
  void launch(size_t index);
  reference::HostTensor<float> read(ir::ValueId v);

  const ir::Graph& graph_;
  codegen::GraphKernels kernels_;
  Device& device_;
  PlanLayout layout_;
  void* arena_ = nullptr;
  void* workspace_ = nullptr;
  std::vector<void*> own_;      // per value with a buffer of its own (else null)
  std::vector<void*> scratch_;  // per launch: its zeroed scratch, if any
  std::vector<std::vector<void*>> tables_;  // per launch: its pointer tables on the device
};

}  // namespace bertc::runtime
