// The Host device: memory is host memory, kernels are compiled for the host and run under
// codegen's emulation, cuBLAS products run on the host exactly as their arguments define them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <memory>
#include <vector>

#include "codegen/host_compile.h"
#include "codegen/host_emulation.h"
#include "runtime/device.h"

namespace bertc::runtime {

// The host's available physical memory (what the Host device can still allocate).
size_t host_available_bytes();

struct HostGraph;  // a graph the Host device recorded (host_device.cpp)

class HostDevice : public Device {
 public:
  // Runs the kernels of sm_`sm` (0: sm_61's), compiled for the host and cached under `cache`;
  // blocks run their threads in `order`, and run in a shuffled order of their own (a GPU runs
  // them in any order): seeded by $BERTC_BLOCK_ORDER_SEED if set (0: grid order), else by 1.
  explicit HostDevice(std::filesystem::path cache, int sm = 0,
                      codegen::ThreadOrder order = codegen::ThreadOrder::Forward);
  ~HostDevice() override;

  std::string name() const override { return "host emulation"; }
  DeviceCapabilities capabilities() const override { return {false, sm_, "", InRunSums::HostCalls}; }
  void* allocate(size_t bytes, std::string_view what) override;
  void upload(void* device, const void* host, size_t bytes) override;
  void download(void* host, const void* device, size_t bytes) override;
  void* allocate_host(size_t bytes, std::string_view what) override;
  void upload_async(void* device, const void* host, size_t bytes) override;
  void fill(void* device, unsigned char byte, size_t bytes) override;
  void copy(void* to, const void* from, size_t bytes) override;
  void load(const std::vector<const codegen::KernelSpec*>& kernels) override;
  void use_images(std::map<std::string, codegen::GpuImage> images, const std::string& compiler_version) override;
  void launch(const codegen::KernelSpec& kernel, void** args) override;
  void library_product(const codegen::LibraryProductArgs& args, const void* first, const void* second, void* c) override;
  size_t allocated_bytes() const override { return allocated_; }
  size_t free_bytes() const override { return host_available_bytes(); }
  void synchronize() override {}
  std::unique_ptr<DeviceGraph> record(const std::function<void()>& body) override;
  void replay(DeviceGraph& graph) override;
  std::vector<double> time_each(const std::vector<std::function<void()>>& works) override;

  void set_order(codegen::ThreadOrder order) { order_ = order; }
  // 0: blocks in grid order; else the seed of each launch's shuffled block order.
  void set_block_order_seed(std::uint64_t seed) { block_order_seed_ = seed; }

  // Runs `work` now, in order with the launches, or adds it to the graph being recorded (the
  // data-parallel gradient sums over MPI, on buffers that are host memory here); a recorded
  // graph's census counts it as `kind`.
  void issue(std::function<void()> work, int64_t GraphCensus::*kind = &GraphCensus::host_calls);
  void issue_host_call(std::function<void()> work) override { issue(std::move(work)); }
  // MPI's or Gloo's sums in host calls (HostCallSums).
  CollectiveOpening open_collective(distributed::Communicator& comm, double timeout_seconds) override;

 private:
  void* poisoned_block(size_t bytes, std::string_view what);
  void refuse_while_recording(const char* what) const;

  std::filesystem::path cache_;
  int sm_;
  HostGraph* recording_ = nullptr;  // the graph being recorded, if any
  codegen::ThreadOrder order_;
  std::uint64_t block_order_seed_;
  codegen::HostEmulator emulator_;
  std::vector<std::unique_ptr<codegen::HostKernelLibrary>> libraries_;  // one per load()
  struct Loaded {
    codegen::HostEntry entry;
    const codegen::HostKernelLibrary* library;
  };
  std::map<std::string, Loaded> entries_;  // every loaded kernel
  std::vector<std::unique_ptr<unsigned char[]>> blocks_;
  size_t allocated_ = 0;
  bool products_issued_ = false;  // a cuBLAS product has run outside a capture
};

}  // namespace bertc::runtime
