// The counts of what a driver's kernels ran, where the driver gives them: bertc's emulated CUDA
// driver counts each launch on the PTX emulator and hands the counts over through its
// bertcEmulatedTakeLaunchCounts (cuda_emulation/library_kernels.h). NVIDIA's driver has no such
// call (a GPU's counters come through CUPTI, which bertc does not read): there, none. The CUDA
// device offers them as its CountedLaunches, which --profile prints where the driver keeps no time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codegen/kernel.h"
#include "runtime/emulator_controls.h"
#include "support/shared_library.h"

namespace bertc::cuda {

class DriverCounts : public runtime::CountedLaunches {
 public:
  using TakeFn = int (*)(void (*)(void*, const char*, const uint64_t*, size_t), void*);
  // The driver's call, or nullptr (then there are no counts: of_driver's answer).
  static std::unique_ptr<DriverCounts> of_driver(const support::SharedLibrary& driver);

  // A launch issued (or recorded into a graph): what its kernel's counts are named by.
  void note(const codegen::KernelSpec& kernel);

  // Every launch run since the first call (the first call drains what ran before it), in the order
  // they ran; waits for the work queued. Throws std::runtime_error where the driver fails.
  const std::vector<runtime::PtxLaunchRecord>& launches() const override;
  bool registers_known() const override { return false; }  // (the driver JIT-compiles the PTX: no ptxas counts)

 private:
  explicit DriverCounts(TakeFn take) : take_(take) {}
  struct Named {
    std::string label, family;
    size_t op_index = 0;
  };
  TakeFn take_;
  std::map<std::string, Named> kernels_;
  mutable std::vector<runtime::PtxLaunchRecord> launches_;
};

}  // namespace bertc::cuda
