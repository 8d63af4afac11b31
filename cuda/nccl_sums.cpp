// NCCL sums and their watchdog (see nccl_sums.h).
#include "cuda/nccl_sums.h"

#include "cuda/cuda_device.h"
#include "support/abrupt_exit.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace bertc::cuda {

using distributed::Communicator;
using distributed::Element;
using distributed::RankError;
namespace {

constexpr auto kPollEvery = std::chrono::milliseconds(200);

// The CUDA device's in-run sums: each bucket's on the second stream, forked from the main one.
class NcclDeviceSums : public runtime::DeviceCollective {
 public:
  NcclDeviceSums(CudaDevice& gpu, Communicator& comm, double timeout_seconds) : gpu_(gpu), sums_(comm, timeout_seconds) {}
  std::string describe() const override {
    return fmt::format("summed by {} on a second stream of the step's CUDA Graph", sums_.describe());
  }
  void issue_sum(const std::vector<Span>& bucket, Element element) override {
    gpu_.fork();
    sums_.issue_sum(bucket, element, gpu_.side_stream());
  }
  void join() override { gpu_.join(); }
  std::unique_ptr<Watch> watch(std::string what) override {
    return std::make_unique<NcclSums::Watch>(sums_, std::move(what));
  }

 private:
  CudaDevice& gpu_;
  NcclSums sums_;
};

}  // namespace

runtime::CollectiveOpening open_nccl_sums(CudaDevice& gpu, Communicator& comm, double timeout_seconds) {
  const NcclProbe probe = find_nccl();
  const std::vector<uint64_t> versions = comm.all_gather(probe.library.loaded() ? static_cast<uint64_t>(probe.version) : 0,
                                                         "the start-up check of every rank's NCCL");
  std::vector<std::string> differ;
  for (size_t q = 0; q < versions.size(); ++q)
    if (versions[q] != versions[0] || versions[q] == 0)
      differ.push_back(versions[q] == 0 ? fmt::format("rank {} found no NCCL", q)
                                        : fmt::format("rank {} has NCCL {}", q, nccl_version_text(int(versions[q]))));
  if (differ.empty()) return {std::make_unique<NcclDeviceSums>(gpu, comm, timeout_seconds), "", ""};
  return {nullptr,
          fmt::format("{}{}{}", fmt::join(differ, ", "),
                      versions[0] == 0 ? "" : fmt::format(" (rank 0 has NCCL {})", nccl_version_text(int(versions[0]))),
                      probe.library.loaded() ? "" : fmt::format(" (tried {})", fmt::join(probe.tried, "; "))),
          "run scripts/setup.sh on every machine (or set BERTC_NCCL to the same libnccl.so.2 everywhere)"};
}

NcclSums::NcclSums(Communicator& comm, double timeout_seconds)
    : comm_(comm), timeout_(timeout_seconds), nccl_(find_nccl()) {
  if (!nccl_.library.loaded())
    throw RankError(fmt::format("[train] allreduce wants NCCL, and none was found (tried {}): run scripts/setup.sh "
                                "(it puts the nvidia-nccl-cu12 wheel in .deps/), set BERTC_NCCL to a libnccl.so.2, or "
                                "set [train] allreduce = \"host\"",
                                fmt::join(nccl_.tried, "; ")));
  if (const char* work = std::getenv("BERTC_NCCL_ONE_RANK_WORK"); work && std::string(work) == "1") {
    if (comm_.size() != 1)
      throw RankError(fmt::format("BERTC_NCCL_ONE_RANK_WORK=1 is for checks on one rank (its ncclAvg is the sum only "
                                  "there), and this run has {} ranks: unset it",
                                  comm_.size()));
    if (nccl_.version < 21000)
      throw RankError(fmt::format("BERTC_NCCL_ONE_RANK_WORK=1 needs ncclAvg, of NCCL 2.10 and newer, and this is {}: "
                                  "unset it, or use a newer NCCL (BERTC_NCCL)",
                                  describe()));
    one_rank_work_ = true;
  }
  NcclApi::UniqueId id{};
  if (comm_.rank() == 0)
    if (const NcclApi::Result rc = nccl_.api.get_unique_id(&id); rc != 0)
      throw RankError("ncclGetUniqueId failed: " + nccl_.api.error_text(rc));
  comm_.broadcast(&id, sizeof id, 0);
  watchdog_ = std::thread([this] { watchdog(); });
  NcclApi::Result rc = 0;
  NcclApi::Comm joined = nullptr;
  {
    Watch joining(*this, "joining the NCCL communicator");  // every rank must come
    rc = nccl_.api.comm_init_rank(&joined, comm_.size(), id, comm_.rank());
  }
  if (rc == 0) {
    std::lock_guard lock(mutex_);  // the watchdog reads it
    nccl_comm_ = joined;
  } else {
    stop_watchdog();
    throw RankError(fmt::format("rank {}: ncclCommInitRank failed: {} (is a GPU visible to this rank, and is its driver "
                                "new enough for {}?); set [train] allreduce = \"host\" to sum through host memory instead",
                                comm_.rank(), nccl_.api.error_text(rc), describe()));
  }
}

NcclSums::~NcclSums() {
  stop_watchdog();
  // While an error unwinds, the other ranks may be inside a sum with this one: ncclCommDestroy
  // could wait for them forever, and the error would never be printed nor every rank stopped.
  // The process is about to end then (the driver aborts every rank): the communicator is left.
  if (nccl_comm_ && std::uncaught_exceptions() == 0) nccl_.api.comm_destroy(nccl_comm_);
}

void NcclSums::stop_watchdog() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
}

std::string NcclSums::describe() const {
  return fmt::format("NCCL {} ({})", nccl_version_text(nccl_.version), nccl_.library.path());
}

void NcclSums::issue_sum(const std::vector<Span>& bucket, Element element, void* stream) {
  const NcclApi& a = nccl_.api;
  const int type = element == Element::F32 ? NcclApi::kFloat32 : element == Element::F16 ? NcclApi::kFloat16
                   : element == Element::Bf16 ? NcclApi::kBfloat16 : -1;
  if (type < 0) throw std::logic_error("NCCL sums gradients of f32, f16 or bf16 only");
  auto check = [&](NcclApi::Result rc, const char* what) {
    if (rc != 0) throw RankError(fmt::format("{} failed: {}", what, a.error_text(rc, nccl_comm_)));
  };
  check(a.group_start(), "ncclGroupStart");
  for (const Span& s : bucket)
    check(a.all_reduce(s.data, s.data, s.count, type, one_rank_work_ ? NcclApi::kAvg : NcclApi::kSum, nccl_comm_,
                       stream),
          "ncclAllReduce");
  check(a.group_end(), "ncclGroupEnd");
}

NcclSums::Watch::Watch(NcclSums& sums, std::string what) : sums_(sums) {
  std::lock_guard lock(sums_.mutex_);
  sums_.waiting_for_ = std::move(what);
  sums_.waiting_since_ = std::chrono::steady_clock::now();
}

NcclSums::Watch::~Watch() {
  std::lock_guard lock(sums_.mutex_);
  sums_.waiting_for_.clear();
}

void NcclSums::watchdog() {
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, kPollEvery, [this] { return stopping_; })) {
    NcclApi::Result async = 0;
    // ncclCommGetAsyncError may be called from any thread while others use the communicator:
    // it is NCCL's way of reporting a peer that failed.
    if (nccl_comm_ && nccl_.api.comm_get_async_error(nccl_comm_, &async) == 0 && async != 0 &&
        async != NcclApi::kInProgress)
      stop_every_rank(fmt::format("NCCL reported {}{}", nccl_.api.error_text(async, nccl_comm_),
                                  waiting_for_.empty() ? "" : " during " + waiting_for_));
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - waiting_since_).count();
    if (!waiting_for_.empty() && waited > timeout_)
      stop_every_rank(fmt::format("{} did not finish within {:.0f} s ([train] rank_timeout): another rank died or "
                                  "hangs",
                                  waiting_for_, timeout_));
  }
}

void NcclSums::stop_every_rank(const std::string& why) {
  std::fprintf(stderr, "bertc: rank %d of %d: error: %s; the last checkpoint is intact: --resume from it (without --resume if the "
               "run made none yet)\n",
               comm_.rank(), comm_.size(), why.c_str());
  std::fflush(stderr);
  // Exiting without unwinding (sums in flight) with a failure status makes mpirun (or torchrun)
  // stop the others; the process's exit tears down its CUDA context and NCCL's kernels with it.
  // Not ncclCommAbort: it waits for every CUDA Graph holding the communicator's work to be
  // destroyed (NCCL's persistent references), which this rank's graphs never are — it would
  // hang here instead of stopping.
  support::abrupt_exit(1);
}

}  // namespace bertc::cuda
