// The emulated CUDA driver's state and rules, behind the driver API that driver_api.cpp exports as
// libcuda.so.1: one GPU of a profile (gpu_profile.h), its memory (host memory, counted against the
// profile's), modules of PTX run by the PTX emulator (ptx/) with its checkers, streams whose work
// runs when something waits for it, in a seeded order among streams that nothing orders, events,
// stream capture into graphs with the rules the CUDA documentation gives, and graphs' launches.
// Written from NVIDIA's cuda.h and the CUDA Programming Guide, not from bertc's own use of them.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cuda_emulation/gpu_profile.h"
#include "cuda_emulation/library_kernels.h"
#include "ptx/executor.h"
#include "ptx/global_checks.h"

namespace bertc::cuda_emulation {

// One piece of device work: what a stream runs and a captured graph node holds.
struct Work {
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;  // kernel, memcpy or memset
  std::function<CUresult()> run;
  std::string what;  // "kernel k_add", for the words of a finding
};

struct Capture;

}  // namespace bertc::cuda_emulation

// The driver's handles (cuda.h declares them as pointers to these).
struct CUctx_st {
  int retained = 0;  // the primary context's count of retains
};
struct CUmod_st {
  explicit CUmod_st(bertc::ptx::Module m) : emulator(std::move(m)) {}
  bertc::ptx::Emulator emulator;
};
struct CUfunc_st {
  CUmod_st* module = nullptr;
  const bertc::ptx::Entry* entry = nullptr;
};
struct CUgraphNode_st {
  bertc::cuda_emulation::Work work;
  std::vector<CUgraphNode_st*> after;  // the nodes it depends on
};
struct CUgraph_st {
  std::vector<std::unique_ptr<CUgraphNode_st>> nodes;
};
struct CUgraphExec_st {
  // The graph's work as instantiated (the graph may be destroyed after), each node's dependences
  // by index.
  std::vector<bertc::cuda_emulation::Work> work;
  std::vector<std::vector<size_t>> after;
};
struct CUevent_st {
  unsigned flags = 0;
  uint64_t issued = 0, done = 0;  // records issued on streams, and those run
  // Recorded on a capturing stream: the capture and its nodes the event stands for.
  std::shared_ptr<bertc::cuda_emulation::Capture> capture;
  std::vector<CUgraphNode_st*> nodes;
};
struct CUstream_st {
  struct Op {
    bertc::cuda_emulation::Work work;  // none for an event's record or wait
    CUevent_st* waits = nullptr;       // runs once `waits` has run its `generation`th record
    uint64_t generation = 0;
    CUevent_st* records = nullptr;     // marks `records`'s record as run
  };
  unsigned flags = 0;
  std::deque<Op> pending;  // issued, not yet run
  std::shared_ptr<bertc::cuda_emulation::Capture> capture;  // while it captures
  std::vector<CUgraphNode_st*> frontier;  // its last captured nodes: what its next one depends on
};

namespace bertc::cuda_emulation {

// A stream capture under way: its graph, mode, the thread and stream it began on, the streams
// drawn into it.
struct Capture {
  std::unique_ptr<CUgraph_st> graph;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  std::thread::id thread;
  CUstream_st* origin = nullptr;
  std::set<CUstream_st*> streams;
  bool invalidated = false;
};

class Driver {
 public:
  // The process's driver (its GPU from the environment when first used).
  static Driver& get();

  // The driver API, each as cuda.h documents it (driver_api.cpp's exports call these). Every call
  // holds the driver's lock: the API may be called from any thread.
  CUresult init();
  CUresult device_count(int* count);
  CUresult device_get(CUdevice* device, int ordinal);
  CUresult device_name(char* name, int length, CUdevice device);
  CUresult device_attribute(int* value, CUdevice_attribute attribute, CUdevice device);
  CUresult device_total_memory(size_t* bytes, CUdevice device);
  CUresult primary_context_retain(CUcontext* context, CUdevice device);
  CUresult primary_context_release(CUdevice device);
  CUresult context_set_current(CUcontext context);
  CUresult memory_allocate(CUdeviceptr* pointer, size_t bytes);
  CUresult memory_free(CUdeviceptr pointer);
  CUresult memory_info(size_t* free, size_t* total);
  CUresult host_allocate(void** pointer, size_t bytes, unsigned flags);
  CUresult host_free(void* pointer);
  CUresult copy_to_device_async(CUdeviceptr to, const void* from, size_t bytes, CUstream stream);
  CUresult copy_to_host_async(void* to, CUdeviceptr from, size_t bytes, CUstream stream);
  CUresult copy_on_device_async(CUdeviceptr to, CUdeviceptr from, size_t bytes, CUstream stream);
  CUresult set_async(CUdeviceptr to, unsigned char byte, size_t bytes, CUstream stream);
  CUresult module_load(CUmodule* module, const void* image, unsigned options, CUjit_option* keys, void** values);
  CUresult module_function(CUfunction* function, CUmodule module, const char* name);
  CUresult module_unload(CUmodule module);
  CUresult launch(CUfunction f, const ptx::Dim3& grid, const ptx::Dim3& block, unsigned shared_bytes, CUstream stream,
                  void** params, void** extra);
  // The launches counted since the last call (library_kernels.h), after running what is queued.
  CUresult take_launch_counts(bertcEmulatedCountedLaunch each, void* user);
  // An emulated library's kernel (library_kernels.h): `accesses` checked when it runs.
  CUresult library_kernel(CUstream stream, std::string what, std::vector<bertcEmulatedAccess> accesses,
                          std::function<std::string()> run);
  CUresult stream_create(CUstream* stream, unsigned flags);
  CUresult stream_destroy(CUstream stream);
  CUresult stream_synchronize(CUstream stream);
  CUresult stream_wait_event(CUstream stream, CUevent event, unsigned flags);
  CUresult event_create(CUevent* event, unsigned flags);
  CUresult event_record(CUevent event, CUstream stream);
  CUresult event_synchronize(CUevent event);
  CUresult event_destroy(CUevent event);
  CUresult begin_capture(CUstream stream, CUstreamCaptureMode mode);
  CUresult end_capture(CUstream stream, CUgraph* graph);
  CUresult graph_instantiate(CUgraphExec* exec, CUgraph graph);
  CUresult graph_launch(CUgraphExec exec, CUstream stream);
  CUresult graph_exec_destroy(CUgraphExec exec);
  CUresult graph_destroy(CUgraph graph);
  CUresult graph_nodes(CUgraph graph, CUgraphNode* nodes, size_t* count);
  CUresult node_type(CUgraphNode node, CUgraphNodeType* type);

  std::recursive_mutex& lock() { return mutex_; }

 private:
  Driver() = default;
  CUresult ready() const;  // not initialised, no GPU, or a sticky error from a kernel's finding
  bool is_device(CUdevice device) const { return profile_ && device == 0; }
  // The stream work goes to (hStream 0 or CU_STREAM_LEGACY: the legacy stream; CU_STREAM_PER_THREAD
  // taken as it), or nullptr with `rc` set where using it is not allowed now.
  CUstream_st* stream_of(CUstream stream, CUresult* rc);
  // Issues `work` on `stream`: a node of its capture's graph while it captures, else its queue.
  CUresult issue(CUstream_st* stream, Work work);
  // A call the documentation calls unsafe during capture (an allocation, a module load: not
  // stream-ordered, so absent from a graph that needed it): refused with 900, invalidating the
  // captures it conflicts with, while this thread captures other than relaxed or any thread
  // captures in global mode.
  CUresult unsafe_during_capture();
  void invalidate(const std::shared_ptr<Capture>& capture);
  // Runs queued work until `done` says so (or all of it), choosing among the streams whose next
  // work may run by the seed; a kernel's finding is said on stderr and becomes the sticky error.
  void run_until(const std::function<bool()>& done);
  void run_all() {
    run_until([] { return false; });
  }
  CUresult run_work(const Work& work);
  bool pinned(const void* p, size_t bytes) const;
  bool device_memory(CUdeviceptr p, size_t bytes) const;
  // Throws what memcheck and initcheck find in a library kernel's `access`, else marks what it
  // writes written (after its run: `after`).
  void check_access(const bertcEmulatedAccess& access, bool after);
  ptx::ArchLimits arch_limits() const;

  std::recursive_mutex mutex_;
  bool initialised_ = false;
  std::optional<GpuProfile> profile_;
  std::string no_gpu_;  // why there is no GPU
  CUctx_st primary_;
  CUresult sticky_ = CUDA_SUCCESS;
  std::map<uint64_t, size_t> device_allocations_, host_allocations_;
  uint64_t allocated_ = 0;
  std::shared_ptr<ptx::GlobalShadow> written_ = std::make_shared<ptx::GlobalShadow>();
  std::set<CUmod_st*> modules_;
  std::vector<std::unique_ptr<CUfunc_st>> functions_;
  std::set<CUstream_st*> streams_;
  CUstream_st legacy_;
  std::set<CUevent_st*> events_;
  std::set<std::shared_ptr<Capture>> captures_;
  std::mt19937_64 order_{1};  // which ready stream runs next (BERTC_EMULATED_SEED)
  uint64_t launch_seed_ = 1;  // the PTX emulator's schedule of blocks and warps
  // Counting (on once take_launch_counts was called): each launch run, its kernel and count words.
  bool counting_ = false;
  std::vector<std::pair<std::string, std::vector<uint64_t>>> counted_;
};

}  // namespace bertc::cuda_emulation
