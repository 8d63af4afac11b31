// The Host device: runs a compiled graph the way the GPU runtime runs it — every value where the
// memory plan puts it (PlanLayout), the rendered launches in order with the arguments their
// records name, cuBLAS records first as cublas_args() hands them over, scratch kept zeroed between
// launches, one workspace — with the kernels compiled for the host under codegen's emulation. So
// launch order, arena offsets (and their reuse) and plan loading are tested in CI against the
// reference executor, without a GPU.
#pragma once

#include <filesystem>
#include <memory>
#include <vector>

#include "codegen/host_compile.h"
#include "codegen/kernel.h"
#include "runtime/plan_layout.h"
#include "runtime/reference/host_tensor.h"

namespace bertc::runtime {

class HostRunner {
 public:
  // Compiles `kernels` (rendered from `graph`) for the host, cached under `cache`.
  HostRunner(const ir::Graph& graph, codegen::GraphKernels kernels, const std::filesystem::path& cache);
  ~HostRunner();

  // As reference::Executor::run: reads inputs, params and states from `env` by name, runs every
  // launch, writes the updates' values back into `env` and returns the graph's outputs.
  std::vector<reference::HostTensor<float>> run(reference::Environment<float>& env,
                                                codegen::ThreadOrder order = codegen::ThreadOrder::Forward);

  const PlanLayout& layout() const { return layout_; }

 private:
  unsigned char* address(ir::ValueId v);
  void launch(const codegen::KernelSpec& k, size_t index, codegen::ThreadOrder order);
  reference::HostTensor<float> read(ir::ValueId v);

  const ir::Graph& graph_;
  codegen::GraphKernels kernels_;
  PlanLayout layout_;
  codegen::HostEmulator emulator_;
  std::unique_ptr<codegen::HostKernelLibrary> library_;
  std::vector<unsigned char> arena_;
  std::vector<std::vector<unsigned char>> own_;     // per value with a buffer of its own (else empty)
  std::vector<std::vector<unsigned char>> scratch_;  // per launch: its zeroed scratch, if any
  std::vector<float> workspace_;                     // the largest workspace any launch needs
};

}  // namespace bertc::runtime
