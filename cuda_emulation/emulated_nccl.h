// The emulated NCCL's communicators and all-reduce, behind the exports nccl_api.cpp gives as
// libnccl.so.2: ranks in separate processes of one machine meet in a POSIX shared-memory segment
// that ncclGetUniqueId names; ncclAllReduce (sum, prod, max, min, avg) runs as a kernel on the
// caller's stream of the emulated driver (library_kernels.h) — queued, or a node of the graph a
// capture records, replayed with it — exchanging the data a chunk at a time, every rank adding
// the ranks' values in rank order, so that every rank gets the same bits, as NCCL promises.
// Where NCCL would hang or corrupt data (ranks calling with different counts, types or ops; a rank
// gone), the emulation still waits as NCCL does, and says why through ncclCommGetAsyncError and
// ncclGetLastError (and on stderr). Written from nccl.h and NCCL's user guide.
#pragma once

#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "cuda_emulation/library_kernels.h"

namespace bertc::cuda_emulation {

struct SharedSegment;  // the ranks' meeting place (emulated_nccl.cpp)

// What an ncclComm_t points to: one rank's view of the communicator, kept alive by the kernels
// that use it (a graph may outlive ncclCommDestroy).
class NcclComm {
 public:
  // Joins rank `rank` of `ranks` to the communicator `id` names, waiting for every rank (as
  // ncclCommInitRank does). Throws NcclFailure.
  NcclComm(int ranks, const ncclUniqueId& id, int rank);
  ~NcclComm();

  int ranks() const { return ranks_; }
  int rank() const { return rank_; }
  ncclResult_t async_error() const { return async_error_.load(); }
  std::string last_error() const;
  // Records a failure NCCL would report asynchronously (said on stderr once).
  void fail(ncclResult_t error, const std::string& why);

  // One all-reduce as its kernel runs it: `count` elements of `type` from `send`, the result in
  // `recv` on every rank. Returns "" or why the kernel cannot go on.
  std::string all_reduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op);

 private:
  // Waits until `ready` holds, watching the other ranks' processes: one that ended (NCCL would
  // hang; a cluster's network would report the peer) sets ncclRemoteError, naming it.
  template <typename Ready>
  void wait_for(Ready ready, const char* what);

  int ranks_ = 0, rank_ = 0;
  std::string name_;
  SharedSegment* shared_ = nullptr;
  size_t mapped_bytes_ = 0;
  uint64_t sequence_ = 0;     // chunks exchanged so far (the same on every rank)
  uint64_t collectives_ = 0;  // all-reduces run so far
  std::atomic<ncclResult_t> async_error_{ncclSuccess};
  mutable std::mutex error_lock_;
  std::string last_error_;
};

// An error of a call, with NCCL's result for it.
struct NcclFailure {
  ncclResult_t result;
  std::string why;
};

// The id of a new communicator (a segment name no other run uses).
ncclUniqueId new_unique_id();

// The element size of `type`, or 0 for a type the emulation does not sum.
size_t nccl_element_bytes(ncclDataType_t type);

}  // namespace bertc::cuda_emulation
