// Finding and binding NCCL (see nccl_library.h).
#include "cuda/nccl_library.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

namespace bertc::cuda {

namespace {

constexpr const char* kSoname = "libnccl.so.2";

template <typename Fn>
bool bind(const support::SharedLibrary& lib, Fn& fn, const char* symbol, std::string* missing) {
  fn = lib.function<Fn>(symbol);
  if (!fn && missing->empty()) *missing = symbol;
  return fn != nullptr;
}

// Every entry point, or the name of the first one missing.
std::string bind_all(const support::SharedLibrary& lib, NcclApi& a) {
  std::string missing;
  bind(lib, a.get_version, "ncclGetVersion", &missing);
  bind(lib, a.get_unique_id, "ncclGetUniqueId", &missing);
  bind(lib, a.comm_init_rank, "ncclCommInitRank", &missing);
  bind(lib, a.comm_destroy, "ncclCommDestroy", &missing);
  bind(lib, a.comm_get_async_error, "ncclCommGetAsyncError", &missing);
  bind(lib, a.get_error_string, "ncclGetErrorString", &missing);
  bind(lib, a.get_last_error, "ncclGetLastError", &missing);
  bind(lib, a.all_reduce, "ncclAllReduce", &missing);
  bind(lib, a.group_start, "ncclGroupStart", &missing);
  bind(lib, a.group_end, "ncclGroupEnd", &missing);
  return missing;
}

}  // namespace

std::string NcclApi::error_text(Result rc, Comm comm) const {
  const char* name = get_error_string ? get_error_string(rc) : nullptr;
  const char* last = get_last_error ? get_last_error(comm) : nullptr;
  std::string out = fmt::format("{} ({})", name ? name : "unknown NCCL error", rc);
  if (last && *last) out += fmt::format(": {}", last);
  return out;
}

support::LibraryLayout nccl_layout() {
  return {"BERTC_NCCL", {kSoname}, {"nvidia/nccl/lib", "nvidia/cu13/lib"}, "nccl-cu12/nvidia/nccl/lib"};
}

std::vector<support::LibraryCandidate> nccl_candidates() { return support::library_candidates(nccl_layout()); }

NcclProbe find_nccl() {
  NcclProbe probe;
  for (const support::LibraryCandidate& candidate : nccl_candidates()) {
    std::string error;
    auto lib = support::SharedLibrary::open(candidate.path, &error, support::SharedLibrary::Lifetime::Process);
    NcclApi api;
    if (lib.loaded()) {
      if (const std::string missing = bind_all(lib, api); !missing.empty())
        error = fmt::format("{} lacks {} (not NCCL, or one older than 2.13?)", lib.path(), missing);
      else if (api.get_version(&probe.version) != 0)
        error = fmt::format("{}: ncclGetVersion failed", lib.path());
    }
    if (lib.loaded() && error.empty()) {
      probe.library = std::move(lib);
      probe.origin = candidate.origin;
      probe.api = api;
      return probe;
    }
    probe.version = 0;
    probe.tried.push_back(support::tried_text(candidate, error));
  }
  return probe;
}

std::string nccl_version_text(int code) {
  if (code >= 20900) return fmt::format("{}.{}.{}", code / 10000, code / 100 % 100, code % 100);
  return fmt::format("{}.{}.{}", code / 1000, code / 100 % 10, code % 100);
}

}  // namespace bertc::cuda
