// Running a compiled graph on a Device the way every device runs it: every value where the
// memory plan puts it (PlanLayout: one arena; inputs, params, states and constants apart), the
// rendered launches in order with the buffers, pointer tables, scratch (zeroed once, per launch)
// and workspace their records name, cuBLAS records before their epilogue kernels. The Host
// device runs it in CI against the reference executor; the CUDA device runs the same code.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <memory>
#include <string>
#include <vector>

#include "codegen/kernel.h"
#include "runtime/device.h"
#include "runtime/plan_layout.h"
#include "ir/host_tensor.h"

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
  void ensure_uploaded(const std::string& name, const ir::Environment<float>& env);
  // Every resident tensor into `env` (for a checkpoint).
  void download(ir::Environment<float>& env) const;
  // The named resident tensors into `env`, and back onto the device (the data-parallel gradient
  // exchange sums them on the host in between).
  void download(const std::vector<std::string>& names, ir::Environment<float>& env) const;
  void upload_named(const std::vector<std::string>& names, const ir::Environment<float>& env);

 private:
  struct Entry {
    void* buffer = nullptr;
    ir::TensorType type;
    bool on_device = false;
  };
  Device& device_;
  std::map<std::string, Entry> entries_;
};

// Where one launch's arguments live: every value's buffer, and the launch's pointer tables (in
// the order of its Table params), scratch and workspace.
struct LaunchBuffers {
  std::function<void*(ir::ValueId)> address;
  std::vector<void*> tables;
  void* scratch = nullptr;
  void* workspace = nullptr;
  // Values the launch is the first of its step to write, in bytes the arena gave others before
  // (LaunchFootprint::fresh; PlanExecutor's fresh_values).
  std::vector<ir::ValueId> fresh;
};

// Issues launch record `k` of `graph` on `device` as the plan runs it: its zero_before buffers
// zeroed, its cuBLAS product (first = the IR's B), then its kernel with its arguments bound and
// the buffers they name (Device::launch_within).
void issue_launch(Device& device, const ir::Graph& graph, const codegen::KernelSpec& k, const LaunchBuffers& buffers);

// Graph: the first run issues its launches eagerly (libraries set up, faults named), the second
// records them as one device graph (a CUDA Graph), every later run replays it. Eager: every run issues every launch (for debugging; the same work, so the same
// results bit for bit).
enum class Launching { Graph, Eager };

// One launch of a profiled run: its index in the plan's kernels and the device's time for it.
struct LaunchTime {
  size_t launch = 0;
  double seconds = 0;
};

class PlanExecutor {
 public:
  // Allocates everything on `device` and loads the kernels; `device` must outlive the executor.
  // With `state`, params and states live there (see ResidentState) instead of being uploaded and
  // downloaded around every run.
  PlanExecutor(const ir::Graph& graph, codegen::GraphKernels kernels, Device& device,
               std::shared_ptr<ResidentState> state = nullptr, Launching launching = Launching::Graph);

  // As reference::Executor::run: uploads inputs, params and states from `env` by name, runs every
  // launch, downloads the updates' values into `env` and returns the graph's outputs. With a
  // resident state, params and states are uploaded only the first time and the updates stay on
  // the device (env keeps the old values until ResidentState::download).
  // `download`, when given, says per graph output whether to bring it back (the others come back
  // empty): a large output read only now and then stays on the device otherwise.
  std::vector<ir::HostTensor<float>> run(ir::Environment<float>& env,
                                                const std::vector<bool>* download = nullptr);

  // Runs this plan, then `next` — a training step and its optimizer step when nothing is
  // accumulated — as one recorded device graph (eager: one after the other), with one wait for
  // both. Both must keep their state in the same ResidentState on the same device, so that `next`
  // reads what this plan left there. Returns both plans' outputs.
  std::pair<std::vector<ir::HostTensor<float>>, std::vector<ir::HostTensor<float>>> run_with(
      PlanExecutor& next, ir::Environment<float>& env, const std::vector<bool>* download = nullptr,
      const std::vector<bool>* next_download = nullptr);

  // Work issued on the device before this plan's launches in every run, eager or recorded into
  // its device graph with them (the data-parallel gradient sums before the optimizer step).
  // Set before the first run.
  void set_prologue(std::function<void()> prologue);
  // Work issued right after launch `after` — with `after` = kernels().kernels.size(), after the
  // last launch and before the updates — in the runs that have hooks on (set_hooks), eager or
  // recorded: a run with hooks and one without are two device graphs. The data-parallel sums of
  // each bucket of gradients go there, as soon as the backward has finished them. Added before
  // the first run.
  void add_hook(size_t after, std::function<void()> work);
  void set_hooks(bool on) { hooks_on_ = on; }
  // Where the plan keeps `v` on the device.
  void* value_address(ir::ValueId v) { return address(v); }
  // The last launch that writes any byte of `v` (none: nullopt).
  std::optional<size_t> last_writer(ir::ValueId v);

  const PlanLayout& layout() const { return layout_; }
  const codegen::GraphKernels& kernels() const { return kernels_; }
  const ir::Graph& graph() const { return graph_; }

  // The census of each device graph recorded since the last call (run_with's too: this plan's
  // and the next's in one), oldest first: what a run says it replays.
  std::vector<GraphCensus> take_recorded_census() { return std::exchange(recorded_census_, {}); }

  // The next run (or run_with, for this plan's part) issues its launches eagerly, each timed on
  // the device (Device::time_each: CUDA events between launches), and appends them to `times`.
  void profile_next_run(std::vector<LaunchTime>* times) { profile_ = times; }

 private:
  void* address(ir::ValueId v);
  void stage_inputs(ir::Environment<float>& env);
  // Every launch, eagerly or into a recording; with BERTC_SYNC_LAUNCHES=1, an eager run waits
  // after each launch, and a failure names the launch and its arguments.
  void issue_all(bool eager);
  // As issue_all(true), each launch timed into profile_ (then cleared).
  void issue_timed();
  // Resident state takes the next values on the device (after the launches).
  void issue_updates();
  std::string describe_arguments(size_t index);
  void wait();  // for the launches issued; a failure says how to find the launch at fault
  // After the wait: updates into env (without resident state) and the outputs `download` asks for.
  std::vector<ir::HostTensor<float>> collect(ir::Environment<float>& env, const std::vector<bool>* download);
  void launch(size_t index);
  ir::HostTensor<float> read(ir::ValueId v);

  const ir::Graph& graph_;
  codegen::GraphKernels kernels_;
  Device& device_;
  std::shared_ptr<ResidentState> state_;
  Launching launching_;
  // Graph: the first run without hooks, and the first with, are eager (a library's first call,
  // cuBLAS's or NCCL's, sets it up, which a capture cannot record).
  bool warmed_up_[2] = {false, false};
  bool& warmed_up() { return warmed_up_[hooks_on_ ? 1 : 0]; }
  bool ran_ = false;  // some run has been issued: no more prologue or hooks
  // Graph: the launches, recorded by the first run after the eager one, without and with hooks.
  std::unique_ptr<DeviceGraph> recorded_[2];
  // run_with's, per next plan and hooks (this plan's, the next's).
  std::map<std::tuple<const PlanExecutor*, bool, bool>, std::unique_ptr<DeviceGraph>> recorded_with_;
  std::vector<GraphCensus> recorded_census_;  // not yet taken (take_recorded_census)
  PlanLayout layout_;
  void* arena_ = nullptr;
  void* workspace_ = nullptr;
  std::vector<void*> own_;      // per value with a buffer of its own (else null)
  // Inputs and constants go up through one host staging area (pinned on a GPU), in order with
  // the launches, with no wait until the run's end.
  std::map<ir::ValueId, size_t> staged_at_;
  unsigned char* staging_ = nullptr;
  std::vector<void*> scratch_;  // per launch: its zeroed scratch, if any
  std::vector<std::vector<void*>> tables_;  // per launch: its pointer tables on the device
  std::vector<std::vector<ir::ValueId>> fresh_;  // per launch: LaunchBuffers::fresh
  std::vector<std::vector<ir::ValueId>> fresh_values();
  std::vector<LaunchTime>* profile_ = nullptr;  // the next run's launch times go here
  std::function<void()> prologue_;
  std::map<size_t, std::vector<std::function<void()>>> hooks_;  // by the launch they follow
  bool hooks_on_ = false;
  void issue_hooks(size_t after);
};

}  // namespace bertc::runtime
