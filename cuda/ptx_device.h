// The PTX device: the compiled plan's kernels as NVRTC compiles them to PTX for the arch, run on
// the PTX emulator (ptx/) with its checkers on, memory and everything but the launches as the Host
// device's. What would run on a GPU of the arch, short of the driver's own compilation of the PTX:
// a check of the exact instructions, and counts of them (never a GPU measurement).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ptx/executor.h"
#include "runtime/emulator_controls.h"
#include "runtime/host_device.h"

namespace bertc::cuda {

// The latencies of sm_`sm`'s first GPU in the table (codegen/launch_limits.h) for the PTX
// emulator's timing model (ptx/timing.h); all 0 where the table has none (not timed).
ptx::Latencies ptx_latencies(int sm);

class PtxDevice : public runtime::HostDevice, public runtime::EmulatorControls {
 public:
  // Compiles kernels for sm_`sm` with NVRTC (PTX, and cubins where an NVRTC reaches the arch: their
  // register counts), cached under `cache`. Throws std::runtime_error naming the NVRTC libraries
  // found when none makes PTX for the arch.
  PtxDevice(std::filesystem::path cache, int sm);
  ~PtxDevice() override;

  std::string name() const override;
  runtime::DeviceCapabilities capabilities() const override;
  void* allocate(size_t bytes, std::string_view what) override;
  // (what they write is marked for initcheck of global memory, then done as the Host device does)
  void upload(void* device, const void* host, size_t bytes) override;
  void upload_async(void* device, const void* host, size_t bytes) override;
  void fill(void* device, unsigned char byte, size_t bytes) override;
  void copy(void* to, const void* from, size_t bytes) override;
  void load(const std::vector<const codegen::KernelSpec*>& kernels) override;
  // A .bertx's images are cubins for a GPU, or PTX of its NVRTC: the emulator runs the PTX NVRTC
  // makes here from the kernels' sources (the same compiler options), whatever it is given.
  void use_images(std::map<std::string, codegen::GpuImage> images, const std::string& compiler_version) override;
  void launch(const codegen::KernelSpec& kernel, void** args) override;
  // memcheck by buffer: each global access inside one of the footprint's buffers (not only in an
  // allocation: an arena holds many values), and its fresh values' old bytes dead for initcheck.
  void launch_within(const codegen::KernelSpec& kernel, void** args, const runtime::LaunchFootprint& footprint) override;
  // The emulator runs bertc's kernels only: plans for it use generated products (capabilities).
  void library_product(const codegen::LibraryProductArgs& args, const void* first, const void* second, void* c) override;
  runtime::EmulatorControls* emulator_controls() override { return this; }

  // Every launch so far, in launch order: the first kMaxLaunchRecords of them (a long training run
  // on the emulator made a record a launch for as long as it ran, read by nothing; bertc check's
  // two steps make a few thousand at most), and how many more went unrecorded.
  static constexpr size_t kMaxLaunchRecords = 1 << 16;
  const std::vector<runtime::PtxLaunchRecord>& launches() const override { return launches_; }
  uint64_t launches_unrecorded() const { return unrecorded_; }
  // Whether the register counts are ptxas's (an NVRTC made cubins for the arch).
  bool registers_known() const override { return registers_known_; }
  // Counting only, for projections of grids too large to emulate whole: every launch from now on
  // runs at most `blocks` of its blocks (ptx::LaunchConfig::sample_blocks; 2 or more) and a
  // kernel's repeats with the same grid take its first launch's counts without running. Results
  // are then incomplete: no value of such a run may be read as the program's. 0: every block.
  // Kernels whose blocks' work follows the data (codegen::blocks_do_alike_work,
  // KernelSpec::work_follows_data) run whole. Global memory's initcheck is off while sampling
  // (the blocks not run write nothing).
  void sample_blocks(uint32_t blocks) override { sample_blocks_ = blocks; }
  uint32_t sampled_blocks() const { return sample_blocks_; }
  // How the approximate instructions' results are made from now on (ptx/approximations.h):
  // correctly rounded (the default), or at the edge of the ISA's error bounds, so that values
  // compared with a reference show whether any GPU's approximations would pass.
  void approximations(ptx::ApproxResults results) override { approx_ = results; }
  // The schedule's seed from now on (ptx::LaunchConfig::seed): 0 runs blocks and warps in index
  // order, lanes lowest first; any other a shuffled order of each, warps interleaved (sm_70 on).
  // A kernel that is right gives the same values under every seed. Default 1.
  void schedule_seed(uint64_t seed) override { seed_ = seed; }
  // How many blocks of a launch run side by side under a seed (ptx::LaunchConfig::resident_blocks;
  // default 1, one block to its end before the next).
  void resident_blocks(uint32_t blocks) override { resident_blocks_ = blocks; }

 private:
  struct Compilers;
  struct Loaded;
  // The first sampled launch of `k`'s kernel with its grid and block shape, if there was one.
  const runtime::PtxLaunchRecord* counted_before(const codegen::KernelSpec& k) const;
  void issue_launch(const codegen::KernelSpec& k, void** args, const runtime::LaunchFootprint* footprint);
  int sm_;
  std::filesystem::path cache_;
  std::unique_ptr<Compilers> compilers_;
  bool registers_known_ = false;
  std::map<std::string, std::unique_ptr<Loaded>> loaded_;  // by kernel name
  std::vector<std::pair<const void*, uint64_t>> memory_;   // every allocation, for each emulator
  std::vector<runtime::PtxLaunchRecord> launches_;
  uint64_t unrecorded_ = 0;
  void record(runtime::PtxLaunchRecord record);
  uint32_t sample_blocks_ = 0;
  ptx::ApproxResults approx_ = ptx::ApproxResults::CorrectlyRounded;
  uint64_t seed_ = 1;
  uint32_t resident_blocks_ = 1;
  // Which bytes of the allocations something wrote (initcheck of global memory; allocations made
  // while sampling are not tracked: sampled launches leave outputs unwritten).
  std::shared_ptr<ptx::GlobalShadow> written_ = std::make_shared<ptx::GlobalShadow>();
};

}  // namespace bertc::cuda
