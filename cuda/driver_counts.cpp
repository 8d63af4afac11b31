// The counts of a driver's kernels (see driver_counts.h).
#include "cuda/driver_counts.h"

#include <span>
#include <stdexcept>

#include <fmt/format.h>

#include "ptx/counts_words.h"

namespace bertc::cuda {

std::unique_ptr<DriverCounts> DriverCounts::of_driver(const support::SharedLibrary& driver) {
  const auto take = driver.function<TakeFn>("bertcEmulatedTakeLaunchCounts");
  return take ? std::unique_ptr<DriverCounts>(new DriverCounts(take)) : nullptr;
}

void DriverCounts::note(const codegen::KernelSpec& kernel) {
  kernels_.try_emplace(kernel.name, Named{kernel.label, std::string(ir::enum_name(kernel.family)), kernel.op_index});
}

const std::vector<runtime::PtxLaunchRecord>& DriverCounts::launches() const {
  struct Taking {
    const DriverCounts* self;
    std::string error;
  } taking{this, ""};
  const int rc = take_(
      [](void* user, const char* kernel, const uint64_t* words, size_t count) {
        auto& t = *static_cast<Taking*>(user);
        runtime::PtxLaunchRecord r;
        r.kernel = kernel;
        // (a kernel launched with several labels, one source: its first)
        if (const auto it = t.self->kernels_.find(kernel); it != t.self->kernels_.end())
          r.label = it->second.label, r.family = it->second.family, r.op_index = it->second.op_index;
        try {
          r.counts = ptx::counts_from_words(std::span(words, count));
        } catch (const std::exception& e) {
          t.error = e.what();
          return;
        }
        t.self->launches_.push_back(std::move(r));
      },
      &taking);
  if (rc != 0) throw std::runtime_error(fmt::format("the driver's launch counts: CUresult {}", rc));
  if (!taking.error.empty()) throw std::runtime_error("the driver's launch counts: " + taking.error);
  return launches_;
}

}  // namespace bertc::cuda
