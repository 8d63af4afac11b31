// The CUDA device: the driver API and cuBLAS through dlopen (a machine without them gets a clear
// error, never a failed start), one context (the device's primary one), one stream, kernels
// compiled by NVRTC for the GPU's arch (through the disk cache) and loaded as modules.
//
// NOT YET RUN ON A GPU: written against the documented driver API and cuBLAS signatures, built and
// its error paths tested in CI; its first GPU run is the next step of the GPU runtime issue.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/device.h"

namespace bertc::cuda {

class CudaDevice : public runtime::Device {
 public:
  // Opens GPU `ordinal`; throws std::runtime_error saying why there is no usable GPU (no driver,
  // no GPU, cuInit failing) and how to train without one. Kernels compile under `cache`.
  // `sm` (0: the GPU's own) runs an older arch's kernels, compiled to PTX that the driver
  // compiles for the GPU present: a P40's (sm_61) or V100's (sm_70) program checked on a newer
  // GPU. A newer arch than the GPU's is refused.
  // request: which GPU (ordinal), the kernel cache, the program's arch (sm), and what to say
  // instead when it cannot run it (DeviceRequest).
  explicit CudaDevice(const runtime::DeviceRequest& request);
  ~CudaDevice() override;

  std::string name() const override;
  runtime::DeviceCapabilities capabilities() const override;
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
  size_t allocated_bytes() const override;
  size_t free_bytes() const override;
  void synchronize() override;
  std::unique_ptr<runtime::DeviceGraph> record(const std::function<void()>& body) override;
  void replay(runtime::DeviceGraph& graph) override;
  std::vector<double> time_each(const std::vector<std::function<void()>>& works) override;

  // The CUstream everything is issued on (and captured from): NCCL's sums go there too, in
  // order with the launches.
  void* stream() const;
  // A second stream for work that overlaps the launches (NCCL's sums of a bucket while the
  // backward goes on), made on first use: fork() makes it wait for everything issued so far on
  // the main stream, join() makes the main stream wait for everything issued on it. Recorded into
  // a graph being captured too, as a fork and a join of its branches.
  void* side_stream();
  void fork();
  void join();
  // NCCL's sums on the second stream (open_nccl_sums).
  runtime::CollectiveOpening open_collective(distributed::Communicator& comm, double timeout_seconds) override;
  // The counts of what the kernels ran, where the driver gives them (driver_counts.h: bertc's
  // emulated driver does); nullptr elsewhere.
  runtime::CountedLaunches* counted_launches() override;

  struct Api;  // the dlopen'ed entry points

 private:
  std::unique_ptr<Api> api_;
};

}  // namespace bertc::cuda
