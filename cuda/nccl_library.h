// Finding NCCL (libnccl.so.2, dlopen'ed like the CUDA driver and cuBLAS): a machine without it
// still runs bertc, and `bertc info` says where it looked.
#pragma once

#include <string>
#include <vector>

#include "support/library_search.h"
#include "support/shared_library.h"

namespace bertc::cuda {

// NCCL's C API as bertc calls it (nccl.h of 2.x; the enum values below are nccl.h's).
struct NcclApi {
  using Result = int;  // ncclResult_t: 0 ncclSuccess
  using Comm = void*;  // ncclComm_t
  struct UniqueId {    // ncclUniqueId, passed by value to ncclCommInitRank
    char internal[128];
  };
  static constexpr int kFloat16 = 6;   // ncclFloat16
  static constexpr int kFloat32 = 7;   // ncclFloat32
  static constexpr int kBfloat16 = 9;  // ncclBfloat16 (NCCL 2.10 and newer)
  static constexpr int kSum = 0;       // ncclSum
  static constexpr int kAvg = 4;       // ncclAvg (NCCL 2.10 and newer)
  static constexpr Result kInProgress = 7;  // ncclInProgress: a non-blocking call still running

  Result (*get_version)(int*) = nullptr;
  Result (*get_unique_id)(UniqueId*) = nullptr;
  Result (*comm_init_rank)(Comm*, int, UniqueId, int) = nullptr;
  Result (*comm_destroy)(Comm) = nullptr;
  Result (*comm_get_async_error)(Comm, Result*) = nullptr;
  const char* (*get_error_string)(Result) = nullptr;
  const char* (*get_last_error)(Comm) = nullptr;
  Result (*all_reduce)(const void*, void*, size_t, int, int, Comm, void*) = nullptr;  // last: cudaStream_t
  Result (*group_start)() = nullptr;
  Result (*group_end)() = nullptr;

  // "ncclInvalidUsage: <NCCL's last message>" for an error `rc` of `comm` (nullptr: none yet).
  std::string error_text(Result rc, Comm comm = nullptr) const;
};

struct NcclProbe {
  support::SharedLibrary library;  // loaded for the whole process; empty when none was found
  NcclApi api;
  std::string origin;              // where the search found it
  int version = 0;                 // ncclGetVersion's code, e.g. 23203 for 2.32.3
  std::vector<std::string> tried;  // "candidate [origin]: why not", for each candidate that failed
};

// Where NCCL lives: libnccl.so.2 (the wheels' nvidia/nccl/lib, scripts/setup.sh's
// .deps/nccl-cu12: PyTorch brings one), $BERTC_NCCL overriding.
support::LibraryLayout nccl_layout();

// Where bertc looks (support::library_candidates of nccl_layout()).
std::vector<support::LibraryCandidate> nccl_candidates();

// Loads the first candidate that is an NCCL (has every entry point of NcclApi). Never throws.
NcclProbe find_nccl();

// "2.32.3" for 23203 (the codes of NCCL 2.9 and later; earlier ones were X*1000+Y*100+Z).
std::string nccl_version_text(int code);

}  // namespace bertc::cuda
