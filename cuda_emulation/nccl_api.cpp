// The emulated NCCL's exports (libnccl.so.2): communicators, groups and ncclAllReduce as nccl.h
// declares them, each argument checked (ncclInvalidArgument, ncclInvalidUsage with the reason in
// ncclGetLastError), run by emulated_nccl. Nothing else is exported (nccl_exports.map).
#include <nccl.h>

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cuda_emulation/emulated_nccl.h"

using bertc::cuda_emulation::NcclComm;
using bertc::cuda_emulation::NcclFailure;

// What an ncclComm_t points to (nccl.h leaves struct ncclComm to the library).
struct ncclComm {
  std::shared_ptr<NcclComm> comm;
};

namespace {

std::mutex lock;
std::string last_error;  // the last failed call's reason (ncclGetLastError)

std::set<ncclComm*>& live() {
  static auto* comms = new std::set<ncclComm*>;
  return *comms;
}

ncclResult_t failed(ncclResult_t result, std::string why) {
  std::lock_guard guard(lock);
  last_error = std::move(why);
  return result;
}

std::shared_ptr<NcclComm> comm_of(ncclComm_t comm) {
  std::lock_guard guard(lock);
  return live().count(comm) ? comm->comm : nullptr;
}

// The emulated driver's call for the all-reduce kernels (library_kernels.h), from the
// libcuda.so.1 the process loaded; none where that is not bertc's emulated driver.
bertcEmulatedLaunchLibraryKernelFn driver_launch() {
  return bertc::cuda_emulation::loaded_driver_symbol<bertcEmulatedLaunchLibraryKernelFn>(
      "bertcEmulatedLaunchLibraryKernel");
}

// An all-reduce called, not yet issued (ncclGroupEnd issues a group's).
struct Call {
  std::shared_ptr<NcclComm> comm;
  const void* send;
  void* recv;
  size_t count;
  ncclDataType_t type;
  ncclRedOp_t op;
  CUstream stream;
};

thread_local int group_depth = 0;
thread_local std::vector<Call> grouped;

int run_calls(void* data, char* why, size_t why_bytes) {
  for (const Call& c : *static_cast<std::vector<Call>*>(data))
    if (const std::string w = c.comm->all_reduce(c.send, c.recv, c.count, c.type, c.op); !w.empty()) {
      std::snprintf(why, why_bytes, "%s", w.c_str());
      return 1;
    }
  return 0;
}

// Issues `calls` as one kernel a stream (in the order of each stream's first call), as NCCL
// launches a group's work only at its end.
ncclResult_t issue(std::vector<Call> calls) {
  const bertcEmulatedLaunchLibraryKernelFn launch = driver_launch();
  if (!launch)
    return failed(ncclUnhandledCudaError,
                  "bertc's emulated NCCL runs only on bertc's emulated CUDA driver (BERTC_CUDA_DRIVER), which this "
                  "process has not loaded");
  std::vector<CUstream> order;
  std::map<CUstream, std::vector<Call>> by_stream;
  for (Call& c : calls) {
    if (!by_stream.count(c.stream)) order.push_back(c.stream);
    by_stream[c.stream].push_back(std::move(c));
  }
  for (CUstream s : order) {
    auto kernel = std::make_unique<std::vector<Call>>(std::move(by_stream[s]));
    std::vector<bertcEmulatedAccess> accesses;
    for (const Call& c : *kernel) {
      const uint64_t bytes = c.count * bertc::cuda_emulation::nccl_element_bytes(c.type);
      if (bytes == 0) continue;
      accesses.push_back({reinterpret_cast<uint64_t>(c.send), bytes, 0, 1, 0});
      accesses.push_back({reinterpret_cast<uint64_t>(c.recv), bytes, 0, 1, 1});
    }
    const std::string what = fmt::format("NCCL all-reduce ({} call(s))", kernel->size());
    if (const CUresult rc = launch(s, what.c_str(), accesses.data(), accesses.size(), run_calls, kernel.release(),
                                   [](void* d) { delete static_cast<std::vector<Call>*>(d); }))
      return failed(ncclUnhandledCudaError, fmt::format("the CUDA driver refused the all-reduce kernel (CUresult {})",
                                                        static_cast<int>(rc)));
  }
  return ncclSuccess;
}

}  // namespace

extern "C" {

// The version of the nccl.h it was written to.
ncclResult_t ncclGetVersion(int* version) {
  if (!version) return failed(ncclInvalidArgument, "ncclGetVersion: version is NULL");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (!id) return failed(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
  *id = bertc::cuda_emulation::new_unique_id();
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  if (!comm) return failed(ncclInvalidArgument, "ncclCommInitRank: comm is NULL");
  if (!driver_launch())
    return failed(ncclUnhandledCudaError,
                  "bertc's emulated NCCL runs only on bertc's emulated CUDA driver (BERTC_CUDA_DRIVER), which this "
                  "process has not loaded");
  try {
    auto handle = std::make_unique<ncclComm>(ncclComm{std::make_shared<NcclComm>(nranks, id, rank)});
    std::lock_guard guard(lock);
    live().insert(handle.get());
    *comm = handle.release();
    return ncclSuccess;
  } catch (const NcclFailure& f) {
    return failed(f.result, "ncclCommInitRank: " + f.why);
  }
}

// (kernels still queued or in a graph keep the communicator: they run after it)
ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  std::lock_guard guard(lock);
  if (!live().erase(comm)) {
    last_error = "ncclCommDestroy: not a communicator of ncclCommInitRank (or destroyed already)";
    return ncclInvalidArgument;
  }
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) { return ncclCommDestroy(comm); }

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  const auto c = comm_of(comm);
  if (!c || !count) return failed(ncclInvalidArgument, "ncclCommCount: no such communicator, or count is NULL");
  *count = c->ranks();
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  const auto c = comm_of(comm);
  if (!c || !rank) return failed(ncclInvalidArgument, "ncclCommUserRank: no such communicator, or rank is NULL");
  *rank = c->rank();
  return ncclSuccess;
}

// Callable from any thread while others use the communicator (bertc's watchdog does).
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* error) {
  const auto c = comm_of(comm);
  if (!c || !error) return failed(ncclInvalidArgument, "ncclCommGetAsyncError: no such communicator, or asyncError is NULL");
  *error = c->async_error();
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

// The communicator's asynchronous error's reason, else the last failed call's.
const char* ncclGetLastError(ncclComm_t comm) {
  thread_local std::string said;
  const auto c = comm ? comm_of(comm) : nullptr;
  said = c ? c->last_error() : "";
  if (said.empty()) {
    std::lock_guard guard(lock);
    said = last_error;
  }
  return said.c_str();
}

ncclResult_t ncclGroupStart() {
  ++group_depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  if (group_depth == 0) return failed(ncclInvalidUsage, "ncclGroupEnd: no ncclGroupStart before it");
  if (--group_depth > 0) return ncclSuccess;
  return issue(std::exchange(grouped, {}));
}

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  const auto c = comm_of(comm);
  if (!c) return failed(ncclInvalidArgument, "ncclAllReduce: not a communicator of ncclCommInitRank");
  if (count > 0 && (!send || !recv)) return failed(ncclInvalidArgument, "ncclAllReduce: sendbuff or recvbuff is NULL");
  if (type < 0 || type >= ncclNumTypes || op < 0 || op >= ncclNumOps)
    return failed(ncclInvalidArgument, fmt::format("ncclAllReduce: datatype {} or op {} is not NCCL's",
                                                   static_cast<int>(type), static_cast<int>(op)));
  if (bertc::cuda_emulation::nccl_element_bytes(type) == 0)
    return failed(ncclInvalidArgument, fmt::format("ncclAllReduce: datatype {} is not summed by the emulation (64-bit "
                                                   "integers and fp8 are not emulated)",
                                                   static_cast<int>(type)));
  Call call{c, send, recv, count, type, op, reinterpret_cast<CUstream>(stream)};
  if (group_depth > 0) {
    grouped.push_back(std::move(call));
    return ncclSuccess;
  }
  return issue({std::move(call)});
}

}  // extern "C"
