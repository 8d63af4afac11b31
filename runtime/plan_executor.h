// Running a compiled graph on a Device the way every device runs it: every value where the
// memory plan puts it (PlanLayout: one arena; inputs, params, states and constants apart), the
// rendered launches in order with the buffers, pointer tables, scratch (zeroed once, per launch)
// and workspace their records name, cuBLAS records before their epilogue kernels. The Host
// device runs it in CI against the reference executor; the CUDA device runs the same code.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codegen/kernel.h"
#include "runtime/device.h"
#include "runtime/plan_layout.h"
#include "runtime/reference/host_tensor.h"

namespace bertc::runtime {

// Params and states kept on the device by name, shared by the executors of a program's graphs
// (the training step and the optimizer step), so that training state stays there between steps:
// uploaded from the host environment once, downloaded only when asked (checkpoints).
class ResidentState {
 public:
  explicit ResidentState(Device& device) : device_(device) {}
  // The buffer of `name` (allocated on first use); throws when two graphs disagree on its type.
  void* buffer(const std::string& name, const ir::TensorType& type);
  // Uploads `name` from `env` unless the device already holds it.
  void ensure_uploaded(const std::string& name, const reference::Environment<float>& env);
  // Every resident tensor into `env` (for a checkpoint).
  void download(reference::Environment<float>& env) const;

 private:
  struct Entry {
    void* buffer = nullptr;
    ir::TensorType type;
    bool on_device = false;
  };
  Device& device_;
  std::map<std::string, Entry> entries_;
};

class PlanExecutor {
 public:
  // Allocates everything on `device` and loads the kernels; `device` must outlive the executor.
  // With `state`, params and states live there (see ResidentState) instead of being uploaded and
  // downloaded around every run.
  PlanExecutor(const ir::Graph& graph, codegen::GraphKernels kernels, Device& device,
               std::shared_ptr<ResidentState> state = nullptr);

  // As reference::Executor::run: uploads inputs, params and states from `env` by name, runs every
  // launch, downloads the updates' values into `env` and returns the graph's outputs. With a
  // resident state, params and states are uploaded only the first time and the updates stay on
  // the device (env keeps the old values until ResidentState::download).
  std::vector<reference::HostTensor<float>> run(reference::Environment<float>& env);

  const PlanLayout& layout() const { return layout_; }

 private:
  void* address(ir::ValueId v);
  void launch(size_t index);
  reference::HostTensor<float> read(ir::ValueId v);

  const ir::Graph& graph_;
  codegen::GraphKernels kernels_;
  Device& device_;
  std::shared_ptr<ResidentState> state_;
  PlanLayout layout_;
  void* arena_ = nullptr;
  void* workspace_ = nullptr;
  std::vector<void*> own_;      // per value with a buffer of its own (else null)
  std::vector<void*> scratch_;  // per launch: its zeroed scratch, if any
  std::vector<std::vector<void*>> tables_;  // per launch: its pointer tables on the device
};

}  // namespace bertc::runtime
