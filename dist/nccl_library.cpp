// Finding and binding NCCL (see nccl_library.h).
#include "dist/nccl_library.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

namespace bertc::dist {
namespace {

constexpr const char* kSoname = "libnccl.so.2";

// The nvidia/nccl/lib folders of the Python environments under `prefix` (lib/python3.*/...).
void add_python_wheels(const std::filesystem::path& prefix, std::vector<std::string>& out) {
  std::error_code ec;
  const std::filesystem::path lib = prefix / "lib";
  if (!std::filesystem::is_directory(lib, ec)) return;
  std::vector<std::filesystem::path> pythons;
  for (const auto& entry : std::filesystem::directory_iterator(lib, ec))
    if (entry.path().filename().string().rfind("python3", 0) == 0) pythons.push_back(entry.path());
  std::sort(pythons.begin(), pythons.end());
  for (const auto& python : pythons)
    for (const char* packages : {"site-packages", "dist-packages"}) {
      const std::filesystem::path candidate = python / packages / "nvidia" / "nccl" / "lib" / kSoname;
      if (std::filesystem::exists(candidate, ec)) out.push_back(candidate.string());
    }
}

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

std::vector<std::string> nccl_candidates() {
  if (const char* forced = std::getenv("BERTC_NCCL"); forced && *forced) return {forced};
  std::vector<std::string> out = {kSoname};
  if (std::string deps = BERTC_DEPS_DIR; !deps.empty())
    out.push_back(deps + "/nccl-cu12/nvidia/nccl/lib/" + kSoname);
  std::vector<std::filesystem::path> prefixes;
  if (const char* venv = std::getenv("VIRTUAL_ENV"); venv && *venv) prefixes.emplace_back(venv);
  if (const char* home = std::getenv("HOME"); home && *home) prefixes.push_back(std::filesystem::path(home) / ".local");
  prefixes.insert(prefixes.end(), {"/usr/local", "/usr", "/opt/conda"});
  for (const auto& prefix : prefixes) add_python_wheels(prefix, out);
  return out;
}

NcclProbe find_nccl() {
  NcclProbe probe;
  for (const std::string& candidate : nccl_candidates()) {
    std::string error;
    auto lib = support::SharedLibrary::open(candidate, &error, support::SharedLibrary::Lifetime::Process);
    NcclApi api;
    if (lib.loaded()) {
      if (const std::string missing = bind_all(lib, api); !missing.empty())
        error = fmt::format("{} lacks {} (not NCCL, or one older than 2.13?)", lib.path(), missing);
      else if (api.get_version(&probe.version) != 0)
        error = fmt::format("{}: ncclGetVersion failed", lib.path());
    }
    if (lib.loaded() && error.empty()) {
      probe.library = std::move(lib);
      probe.api = api;
      return probe;
    }
    probe.version = 0;
    probe.tried.push_back(error.rfind(candidate, 0) == 0 ? error : candidate + ": " + error);  // dlerror names it already
  }
  return probe;
}

std::string nccl_version_text(int code) {
  if (code >= 20900) return fmt::format("{}.{}.{}", code / 10000, code / 100 % 100, code % 100);
  return fmt::format("{}.{}.{}", code / 1000, code / 100 % 10, code % 100);
}

}  // namespace bertc::dist
