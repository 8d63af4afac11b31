// Sums of GPU buffers over the ranks with NCCL, issued on a CUDA stream in order with the
// device's launches — and so recorded into the device's CUDA Graph when the stream is being
// captured — plus the watchdog that stops this rank when NCCL fails or a wait outlasts the
// deadline (NCCL itself would wait forever for a rank that died); and the CUDA device's in-run
// sums made of them (open_nccl_sums: a runtime::DeviceCollective on its second stream).
//
// NOT YET RUN ON A GPU: written against NCCL 2.x's documented API; in CI it is loaded, joined
// and refused without a GPU (tests/unit/nccl_test.cpp); tests/gpu/run.sh's check_nccl trains
// with it on one rank and compares with no exchange at all.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "distributed/communicator.h"
#include "cuda/nccl_library.h"
#include "runtime/device_collective.h"

namespace bertc::cuda {

class CudaDevice;  // cuda/cuda_device.h

// The device memory NCCL takes when it joins, beyond the plan: its own buffers, sized by channels
// and peers (NCCL_BUFFSIZE, 4 MiB, per protocol, channel and ring neighbour: on the 2-16 channels of
// PCIe and NVLink machines, tens to a few hundred MiB; 512 MiB covers that, under 3% of a P40's 24
// GB).
constexpr uint64_t kNcclReserveBytes = uint64_t{512} << 20;

// NCCL's sums among `gpu`'s launches (on its second stream) over the ranks of `comm`, if every
// rank has the same NCCL (ranks that chose differently would wait for each other forever, and
// NCCL's versions do not talk to each other); else why not, naming each rank's, and the fix.
// Every rank calls it at once. Throws RankError as NcclSums does when joining fails.
runtime::CollectiveOpening open_nccl_sums(CudaDevice& gpu, distributed::Communicator& comm, double timeout_seconds);

class NcclSums {
 public:
  using Span = runtime::DeviceCollective::Span;

  // Joins the ranks of `comm` in one NCCL communicator on the GPU whose CUDA context is current on
  // the calling thread: rank 0's unique id reaches the others over `comm`. Throws RankError
  // naming the fix when NCCL is missing or the join fails (no GPU, a driver too old).
  NcclSums(distributed::Communicator& comm, double timeout_seconds);
  ~NcclSums();
  NcclSums(const NcclSums&) = delete;
  NcclSums& operator=(const NcclSums&) = delete;

  // Issues the in-place sums of `bucket` (F32, F16 or Bf16 elements) on `stream` (a CUstream) as
  // one NCCL group: one bucket, one launch of NCCL's kernel.
  // On one rank NCCL enqueues nothing for an in-place sum, so a one-rank GPU check would capture
  // no NCCL work at all: with BERTC_NCCL_ONE_RANK_WORK=1 (tests/gpu/run.sh; one rank only, refused
  // on more) the sums are ncclAvg, which NCCL runs on one rank as a kernel scaling by 1/1 —
  // exactly the identity — so real NCCL work is captured and replayed, and the run must equal
  // one without NCCL bit for bit.
  void issue_sum(const std::vector<Span>& bucket, distributed::Element element, void* stream);
  std::string describe() const;  // "NCCL 2.32.3 (/path/libnccl.so.2)"

  // While a Watch lives, the watchdog gives the wait `timeout_seconds`: past it this rank prints
  // "bertc: rank R of N: error: <what> did not finish ..." and exits without unwinding (sums may
  // still be in flight), which makes mpirun stop the others.
  class Watch : public runtime::DeviceCollective::Watch {
   public:
    Watch(NcclSums& sums, std::string what);
    ~Watch() override;
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

   private:
    NcclSums& sums_;
  };

 private:
  void watchdog();
  void stop_watchdog();
  [[noreturn]] void stop_every_rank(const std::string& why);

  distributed::Communicator& comm_;
  double timeout_;
  NcclProbe nccl_;
  bool one_rank_work_ = false;  // BERTC_NCCL_ONE_RANK_WORK: ncclAvg on one rank (issue_sum)
  NcclApi::Comm nccl_comm_ = nullptr;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::string waiting_for_;  // empty: no watched wait
  std::chrono::steady_clock::time_point waiting_since_;
  std::thread watchdog_;
};

}  // namespace bertc::cuda
