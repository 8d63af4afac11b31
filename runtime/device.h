// A device the compiled plan runs on: memory, the plan's kernels, matrix-library products. The plan
// executor (plan_executor.h) does everything else — where values live, what each launch gets, in
// which order — the same way for every device, so the Host device's tests cover it for CUDA too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/kernel.h"
#include "codegen/gpu_image.h"
#include "distributed/communicator.h"
#include "runtime/device_collective.h"

namespace bertc::runtime {

class CountedLaunches;   // runtime/emulator_controls.h
class EmulatorControls;  // runtime/emulator_controls.h

// What a recorded device graph holds, by kind of node: a CUDA Graph's as the driver lists them
// (cuGraphGetNodes, cuGraphNodeGetType), the Host device's as its work was issued. Said once a
// run records its step, and what the GPU check reads to see NCCL's work inside the graph.
struct GraphCensus {
  int64_t kernels = 0;  // kernel launches (ours, cuBLAS's, NCCL's)
  int64_t copies = 0, sets = 0, host_calls = 0;
  int64_t other = 0;  // events, empty nodes, child graphs, ...
  int64_t nodes() const { return kernels + copies + sets + host_calls + other; }
  std::string describe() const;  // "118 nodes: 111 kernels, 4 copies, 1 set, 2 other"
};

// Device work recorded once and replayed as one launch (a CUDA Graph on a GPU).
class DeviceGraph {
 public:
  virtual ~DeviceGraph() = default;
  virtual GraphCensus census() const = 0;
};

// Where data-parallel gradient sums can run among a device's own launches (so inside its recorded
// graph): the sums of open_collective(), and for HostCalls any host work (issue_host_call).
enum class InRunSums {
  None,       // nowhere: the sums go through host memory between the step's runs
  HostCalls,  // host functions in order with the launches: MPI or Gloo on the Host device
  SideQueue,  // a collective library of the device's on a second queue: NCCL on a GPU
};

// What opening a device needs.
struct DeviceRequest {
  // The arch whose kernels the device runs: for the Host device, any (0: sm_61's); for a GPU, its
  // own (0) or an older one's, as PTX (--arch sm_61 on a newer GPU checks a P40's program there).
  int sm = 0;
  std::filesystem::path kernel_cache;  // where kernels compile
  int ordinal = 0;                     // which GPU of the machine (a data-parallel rank's local rank)
  // What the caller's user can do instead, said after the cause when the device cannot run the
  // work: there is no such device here; or its GPU is older than the program's arch (a "{}" in it
  // is the GPU's arch number). Each command knows its own ways (a .bertx cannot fall back to the
  // CPU reference; a config can).
  std::string instead = "run where that device is";
  std::string older_gpu = "compile for this GPU (--arch sm_{})";
};

// What callers may ask of a device instead of its name.
struct DeviceCapabilities {
  bool gpu = false;  // real hardware: timings mean something, MFU is measured, copies back cost time
  int sm = 0;        // the arch its kernels are rendered for (0: sm_61's, which the host emulation runs)
  std::string no_library;  // why matrix products cannot run in cuBLAS here ("": they can)
  InRunSums in_run_sums = InRunSums::None;
  // Device memory the collective library of SideQueue sums takes when it joins, beyond the plan
  // (for --batch-size auto to leave free): 0 for the others.
  uint64_t collective_library_bytes = 0;
  // A GPU whose driver times its work (CUDA events): MFU and --profile read those times. False for
  // a driver that keeps none (bertc's emulated driver: its figures are the emulator's, not a GPU's).
  bool times_measured = false;
};

// What one launch of a plan may touch, as the plan knows it and a device does not: a memory plan
// puts many values in one allocation (its arena), where a device sees only the allocation.
struct LaunchFootprint {
  struct Buffer {
    const void* base = nullptr;
    size_t bytes = 0;
    std::string what;  // how a finding names it: "'x' (f32[2,8])", "kernel k_..'s scratch"
  };
  std::vector<Buffer> buffers;  // every buffer its arguments name: values, tables and their entries, scratch, workspace
  // Values this launch is the first of its step to write, in arena bytes other values held before,
  // and its workspace (shared by every launch): their old contents are dead (reading them before
  // writing them is initcheck's finding). Not values the launch has zeroed first (zero_before), nor
  // bytes a value it reads shares (in place), nor a workspace a cuBLAS product filled for it.
  std::vector<Buffer> fresh;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;
  virtual DeviceCapabilities capabilities() const = 0;
  // `bytes` of device memory, 256-byte aligned, owned by the device (freed with it). Throws
  // ir::OutOfMemory naming `what` (what the buffer is for), the size and the settings that need
  // less when the device is out of memory.
  virtual void* allocate(size_t bytes, std::string_view what) = 0;
  virtual void upload(void* device, const void* host, size_t bytes) = 0;
  virtual void download(void* host, const void* device, size_t bytes) = 0;
  // Host memory the device copies from without staging (pinned on a GPU), freed with the device.
  virtual void* allocate_host(size_t bytes, std::string_view what) = 0;
  // Queues a copy from `host` (from allocate_host) that runs in order with the launches; `host`
  // must stay unchanged until the next synchronize().
  virtual void upload_async(void* device, const void* host, size_t bytes) = 0;
  virtual void fill(void* device, unsigned char byte, size_t bytes) = 0;
  virtual void copy(void* to, const void* from, size_t bytes) = 0;  // device to device, in order
  // Makes `kernels` launchable (the Host device compiles them; CUDA loads their images).
  virtual void load(const std::vector<const codegen::KernelSpec*>& kernels) = 0;
  // Kernels compiled already (a .bertx's images, by kernel name, made by the kernel compiler of
  // version `compiler_version`: NVRTC's), for later load()s: a GPU device loads these and
  // compiles nothing, refusing a kernel without an image, images of another arch than its GPU's,
  // and images its driver is too old to load (driver_loads). The Host device runs no GPU image:
  // it compiles the kernels' sources for the CPU whatever it is given.
  virtual void use_images(std::map<std::string, codegen::GpuImage> images, const std::string& compiler_version) = 0;
  // args[i] points at the value of parameter i (cuLaunchKernel's convention).
  virtual void launch(const codegen::KernelSpec& kernel, void** args) = 0;
  // A launch with the buffers its arguments name (PlanExecutor's launches), for a device that
  // checks kernels against them (the PTX device); the others launch as launch() does.
  virtual void launch_within(const codegen::KernelSpec& kernel, void** args, const LaunchFootprint& /*footprint*/) {
    launch(kernel, args);
  }
  // A product by the device's matrix library (`args`: codegen/library_gemm.h; first = the IR's
  // B): cuBLAS on a GPU, the host's column-major product on the Host device; a device with no
  // library says why in DeviceCapabilities::no_library, and no plan for it holds one.
  virtual void library_product(const codegen::LibraryProductArgs& args, const void* first, const void* second,
                               void* c) = 0;
  // Device memory this device has allocated so far (buffers, not host staging).
  virtual size_t allocated_bytes() const = 0;
  // Device memory still free to allocate (the GPU's free memory; the host's available RAM).
  virtual size_t free_bytes() const = 0;
  // Waits for everything launched so far.
  virtual void synchronize() = 0;

  // InRunSums::HostCalls: runs `work` on the host in order with the launches (recorded into a
  // graph too). Other devices throw std::logic_error.
  virtual void issue_host_call(std::function<void()> work);
  // Sums over the ranks of `comm` among this device's launches (capabilities().in_run_sums is not
  // None), each wait bounded by `timeout_seconds`. Every rank calls it at once (it may exchange with
  // the others, and join them in a library's communicator), and every rank gets the same answer:
  // the sums, or why not and the fix (the ranks' collective libraries missing or differing). Throws
  // distributed::RankError when joining fails; other devices throw std::logic_error.
  virtual CollectiveOpening open_collective(distributed::Communicator& comm, double timeout_seconds);

  // The emulator's settings and counts, for a device whose kernels run on the PTX emulator
  // (bertc check's emulator flags); nullptr for the others.
  virtual EmulatorControls* emulator_controls() { return nullptr; }
  // The counts of what the launches executed, where the device has them (the PTX device's, a
  // driver's that counts: --profile prints them where no time is measured); nullptr elsewhere.
  virtual CountedLaunches* counted_launches();

  // Records the fills, copies, launches and products `body` issues, without running them, as one
  // graph that replay() runs again and again with the same arguments (kernel arguments are taken
  // when recorded, so the buffers they name must hold each run's data at the same addresses).
  // Uploads and downloads are not allowed while recording.
  virtual std::unique_ptr<DeviceGraph> record(const std::function<void()>& body) = 0;
  virtual void replay(DeviceGraph& graph) = 0;

  // Issues each of `works` (launches, products) in turn and returns the seconds the device spent
  // on each, after one wait for all: on a GPU a CUDA event before the first and after each (the
  // launches queue up as usual, so a short kernel's time holds no host-side issue time); on the
  // Host device the wall clock around each. For profiles.
  virtual std::vector<double> time_each(const std::vector<std::function<void()>>& works) = 0;
};

}  // namespace bertc::runtime
