// How the trainer runs its two graphs: op by op on the reference executor, or as the compiled
// plan — rendered kernels at memory-plan offsets — on a device. The Host device runs the plan's
// kernels under codegen's emulation (slow; it is how the GPU runtime's plan execution is checked
// without a GPU).
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <utility>
#include <string>
#include <vector>

#include "codegen/matrix_strategy.h"
#include "ir/graph.h"
#include "runtime/device.h"
#include "runtime/plan_executor.h"
#include "reference/executor.h"

namespace bertc::train {

class GraphRunner {
 public:
  virtual ~GraphRunner() = default;
  // As reference::Executor::run: reads inputs, params and states from `env`, writes the updates
  // back, returns the outputs and the values named in `fetch` (given when the runner was made),
  // except those named in `leave` (a device then need not copy them back).
  virtual reference::RunResult<float> run(ir::Environment<float>& env,
                                          const std::set<std::string>& leave = {}) = 0;
  // Brings params and states kept on a device back into `env` (before a checkpoint); a runner
  // that writes updates into env at every run has nothing to do.
  virtual void download_state(ir::Environment<float>& /*env*/) {}
  // The same for the named states only, and their values in `env` back onto the device.
  virtual void download_state(const std::vector<std::string>& /*names*/, ir::Environment<float>& /*env*/) {}
  virtual void upload_state(const std::vector<std::string>& /*names*/, const ir::Environment<float>& /*env*/) {}
  // The compiled plan it runs (to profile it, or add work to it: PlanExecutor::set_prologue);
  // nullptr for the reference executor, which runs ops, not launches.
  virtual runtime::PlanExecutor* plan() { return nullptr; }

  // In the runs with hooks on (set_hooks): `ready(g, data)` as soon as a run has written every
  // value of `groups[g]` and of the groups before it — after that op (reference executor) or
  // launch (plan; on its device, in order with the launches, recorded with them) — with their
  // f32 data in this run, which it may change in place; then `done(data)`, every group's, after
  // the run's last op or launch and before its updates. The data-parallel sums of each bucket of
  // gradients go there. Set once, before the first run.
  using GroupData = std::vector<float*>;
  virtual void add_value_hooks(std::vector<std::vector<ir::ValueId>> groups,
                               std::function<void(size_t, const GroupData&)> ready,
                               std::function<void(const std::vector<GroupData>&)> done) = 0;
  virtual void set_hooks(bool on) = 0;
  // Times each launch of the next run into `times` (see PlanExecutor::profile_next_run); a plan
  // runner only.
  virtual void profile_next_run(std::vector<runtime::LaunchTime>* times);
};

// Runs `first` then `second` from `env` — a training step and its optimizer step when nothing is
// accumulated — as one device graph when both are plans sharing a device and resident state
// (one recorded graph, one wait), else one after the other; `leave` as for run(), for `first`.
std::pair<reference::RunResult<float>, reference::RunResult<float>> run_together(
    GraphRunner& first, GraphRunner& second, ir::Environment<float>& env, const std::set<std::string>& leave = {});

std::unique_ptr<GraphRunner> reference_runner(const ir::Graph& graph, std::vector<std::string> fetch);

// The compiled plan on `device` (shared by the step and optimizer runners): kernels rendered for
// `target` (sm 0: sm_61's). Fetched values are kept alive to the end of the plan. With `state`
// (shared too), params and states stay on the device between runs (see runtime::ResidentState).
std::unique_ptr<GraphRunner> plan_runner(const ir::Graph& graph, std::vector<std::string> fetch,
                                         const codegen::RenderTarget& target, std::shared_ptr<runtime::Device> device,
                                         std::shared_ptr<runtime::ResidentState> state = nullptr,
                                         runtime::Launching launching = runtime::Launching::Graph);
// `graph` with the fetched values appended to its outputs, in order: the graph a plan runner
// renders and runs (the memory plan keeps them to the end). bertc compile -o FILE.bertx stores
// this graph, so that a .bertx runs as compiled.
ir::Graph with_fetched_outputs(ir::Graph graph, const std::vector<std::string>& fetch);
// A plan runner of kernels rendered already (a .bertx's) for `runnable` =
// with_fetched_outputs(graph, fetch); throws std::invalid_argument when its outputs do not end
// with the fetched values.
std::unique_ptr<GraphRunner> compiled_plan_runner(const ir::Graph& runnable, std::vector<std::string> fetch,
                                                  codegen::GraphKernels kernels, std::shared_ptr<runtime::Device> device,
                                                  std::shared_ptr<runtime::ResidentState> state,
                                                  runtime::Launching launching);

}  // namespace bertc::train
