// NVRTC through dlopen: program creation with the prelude as in-memory headers, compilation,
// images and logs; the parallel driver and the checksummed disk cache.
#include "cuda/nvrtc_compiler.h"

#include <cstdio>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <regex>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xxhash.h>

#include "cuda/gpu_image_entry.h"
#include "codegen/kernel_cache.h"

#include "support/atomic_file.h"
#include "codegen/prelude.h"

namespace bertc::cuda {

using codegen::CompileStats;
using codegen::EmbeddedFile;
using codegen::GpuImage;
using codegen::KernelCompileError;
using codegen::KernelSource;
using codegen::PtxasInfo;
using codegen::main_loop_mix;
using codegen::prelude_files;
using codegen::read_cache_entry;
using codegen::write_cache_entry;
namespace {

using Program = void*;
struct Api {  // the NVRTC entry points bertc calls; each returns nvrtcResult (0: success)
  int (*create)(Program*, const char*, const char*, int, const char* const*, const char* const*);
  int (*compile)(Program, int, const char* const*);
  int (*log_size)(Program, size_t*);
  int (*log)(Program, char*);
  int (*cubin_size)(Program, size_t*);
  int (*cubin)(Program, char*);
  int (*ptx_size)(Program, size_t*);
  int (*ptx)(Program, char*);
  int (*destroy)(Program*);
  const char* (*error_string)(int);
};

Api api_of(const support::SharedLibrary& lib) {
  Api a{};
  auto get = [&](auto& fn, const char* name) {
    fn = lib.function<std::remove_reference_t<decltype(fn)>>(name);
    if (!fn) throw std::runtime_error(fmt::format("{} lacks {}: not a usable NVRTC", lib.path(), name));
  };
  get(a.create, "nvrtcCreateProgram");
  get(a.compile, "nvrtcCompileProgram");
  get(a.log_size, "nvrtcGetProgramLogSize");
  get(a.log, "nvrtcGetProgramLog");
  get(a.cubin_size, "nvrtcGetCUBINSize");
  get(a.cubin, "nvrtcGetCUBIN");
  get(a.ptx_size, "nvrtcGetPTXSize");
  get(a.ptx, "nvrtcGetPTX");
  get(a.destroy, "nvrtcDestroyProgram");
  get(a.error_string, "nvrtcGetErrorString");
  return a;
}

std::string describe_libraries(const std::vector<NvrtcProbe>& probes) {
  std::string s;
  for (const NvrtcProbe& p : probes) {
    if (!p.found) {
      s += fmt::format("\n  {}: {}", p.candidate, p.error);
      continue;
    }
    std::vector<std::string> archs;
    for (int a : p.found->archs) archs.push_back(fmt::format("sm_{}", a));
    s += fmt::format("\n  {} (NVRTC {}.{}): {}", p.found->library.path(), p.found->major, p.found->minor,
                     fmt::join(archs, " "));
  }
  return s;
}

}  // namespace

NvrtcCompiler::NvrtcCompiler(NvrtcLibrary library, int arch, int target, bool ptx)
    : library_(std::move(library)), arch_(arch), target_(target), ptx_(ptx) {}

namespace {

bool loads(int major, int minor, int driver_version, bool ptx) {
  if (driver_version == 0) return true;
  const int version = major * 1000 + minor * 10;
  return ptx ? version <= driver_version : major <= driver_version / 1000;
}

bool driver_loads(const NvrtcLibrary& lib, int driver_version, bool ptx) {
  return loads(lib.major, lib.minor, driver_version, ptx);
}

}  // namespace

bool driver_loads(const std::string& nvrtc_version, int driver_version, bool ptx) {
  int major = 0, minor = 0;
  if (std::sscanf(nvrtc_version.c_str(), "%d.%d", &major, &minor) != 2) return true;
  return loads(major, minor, driver_version, ptx);
}

namespace {

// How to give bertc an NVRTC that compiles for sm_`arch`, where none was found.
std::string find_one(int arch) {
  if (const char* forced = std::getenv("BERTC_NVRTC"); forced && *forced)
    return fmt::format("BERTC_NVRTC={} is what bertc tried: point it at a libnvrtc.so that compiles for sm_{}{}, or "
                       "unset it to search the usual places",
                       forced, arch, arch < 75 ? " (CUDA 12's: CUDA 13's starts at sm_75)" : "");
  if (arch < 75)
    return "CUDA 13's NVRTC starts at sm_75; for sm_61 and sm_70 run scripts/setup.sh (it installs the CUDA 12 NVRTC "
           "wheel into .deps/) or point BERTC_NVRTC at a libnvrtc.so.12";
  return "install a CUDA toolkit, or run scripts/setup.sh (it installs the CUDA 12 NVRTC wheel into .deps/), or point "
         "BERTC_NVRTC at a libnvrtc.so";
}

}  // namespace

NvrtcCompiler NvrtcCompiler::for_arch(int arch, int driver_version) {
  std::vector<NvrtcProbe> probes = probe_nvrtc_libraries();
  for (NvrtcProbe& p : probes)
    if (p.found && p.found->supports(arch) && driver_loads(*p.found, driver_version, false))
      return NvrtcCompiler(std::move(*p.found), arch, arch, false);
  // No cubin anywhere: PTX for the newest arch below, which the driver compiles when loading.
  for (NvrtcProbe& p : probes) {
    if (!p.found || !driver_loads(*p.found, driver_version, true)) continue;
    int target = 0;
    for (int a : p.found->archs)
      if (a <= arch) target = std::max(target, a);
    if (target > 0) return NvrtcCompiler(std::move(*p.found), arch, target, true);
  }
  if (driver_version != 0)
    throw std::runtime_error(fmt::format(
        "no NVRTC library compiles for sm_{} in a form the driver (CUDA {}.{}) loads. Found:{}\nUpdate the driver, or "
        "point BERTC_NVRTC at the libnvrtc of the driver's CUDA version",
        arch, driver_version / 1000, driver_version % 1000 / 10, describe_libraries(probes)));
  throw std::runtime_error(
      fmt::format("no NVRTC library compiles for sm_{}. Found:{}\n{}", arch, describe_libraries(probes), find_one(arch)));
}

NvrtcCompiler NvrtcCompiler::ptx_for_arch(int arch, int driver_version) {
  std::vector<NvrtcProbe> probes = probe_nvrtc_libraries();
  for (NvrtcProbe& p : probes)
    if (p.found && p.found->supports(arch) && driver_loads(*p.found, driver_version, true))
      return NvrtcCompiler(std::move(*p.found), arch, arch, true);
  throw std::runtime_error(fmt::format("no NVRTC library makes PTX for compute_{}{}. Found:{}", arch,
                                       driver_version ? fmt::format(" that the driver (CUDA {}.{}) loads",
                                                                    driver_version / 1000, driver_version % 1000 / 10)
                                                      : "",
                                       describe_libraries(probes)) +
                           "\n" + find_one(arch));
}

std::string NvrtcCompiler::version() const { return fmt::format("{}.{}", library_.major, library_.minor); }

std::vector<std::string> NvrtcCompiler::options() const {
  std::vector<std::string> o = {fmt::format("--gpu-architecture={}_{}", ptx_ ? "compute" : "sm", target_),
                                 "--std=c++17", "--device-as-default-execution-space", "--ptxas-options=-v"};
  if (line_info_) o.push_back("--generate-line-info");
  return o;
}

PtxasInfo parse_ptxas_log(const std::string& full_log, const std::string& kernel) {
  // The section of `kernel`: from "Compiling entry function '<kernel>'" to the next entry.
  std::string log = full_log;
  if (!kernel.empty()) {
    const std::string marker = "Compiling entry function '" + kernel + "'";
    const size_t at = full_log.find(marker);
    if (at == std::string::npos) return {};
    const size_t next = full_log.find("Compiling entry function", at + marker.size());
    log = full_log.substr(at, next == std::string::npos ? std::string::npos : next - at);
  }
  PtxasInfo info;
  std::smatch m;
  auto number = [&](const std::regex& re, int& out) {
    if (std::regex_search(log, m, re)) out = std::stoi(m[1].str());
  };
  number(std::regex(R"(Used (\d+) registers)"), info.registers);
  number(std::regex(R"((\d+) bytes smem)"), info.shared_bytes);
  number(std::regex(R"((\d+) bytes stack frame)"), info.stack_bytes);
  number(std::regex(R"((\d+) bytes spill stores)"), info.spill_store_bytes);
  number(std::regex(R"((\d+) bytes spill loads)"), info.spill_load_bytes);
  return info;
}

GpuImage NvrtcCompiler::compile(const KernelSource& kernel, const std::filesystem::path& failed_folder) const {
  const Api a = api_of(library_.library);
  std::vector<const char*> header_texts, header_names;
  for (const EmbeddedFile& f : prelude_files()) {
    header_texts.push_back(f.text.data());
    header_names.push_back(f.name.data());
  }
  // The embedded texts are NUL-terminated string literals, so .data() is a C string.
  Program prog = nullptr;
  if (int r = a.create(&prog, kernel.source.c_str(), (kernel.name + ".cu").c_str(), static_cast<int>(header_texts.size()),
                       header_texts.data(), header_names.data());
      r != 0)
    throw KernelCompileError(fmt::format("NVRTC could not create program {}: {}", kernel.name, a.error_string(r)));
  const std::vector<std::string> opts = options();
  std::vector<const char*> opt_ptrs;
  for (const std::string& o : opts) opt_ptrs.push_back(o.c_str());
  const int result = a.compile(prog, static_cast<int>(opt_ptrs.size()), opt_ptrs.data());
  size_t log_size = 0;
  a.log_size(prog, &log_size);
  std::string log(log_size, '\0');
  if (log_size > 0) a.log(prog, log.data());
  if (!log.empty() && log.back() == '\0') log.pop_back();
  if (result != 0) {
    a.destroy(&prog);
    // The source is kept for the user to read, where the folder takes it.
    const auto path = failed_folder / (kernel.name + ".cu");
    const bool kept = write_cache_entry(path, kernel.source);
    throw KernelCompileError(fmt::format("NVRTC {} ({}) failed to compile kernel {} for sm_{}: {}\nsource: {}\n{}",
                                         version(), library(), kernel.name, arch_, a.error_string(result),
                                         kept ? path.string() : "(not kept: its folder cannot be written)", log));
  }
  GpuImage out{kernel.name, {}, ptx_, parse_ptxas_log(log, kernel.name), {}, false};
  size_t size = 0;
  (ptx_ ? a.ptx_size : a.cubin_size)(prog, &size);
  out.image.resize(size);
  (ptx_ ? a.ptx : a.cubin)(prog, out.image.data());
  std::string ptx = ptx_ ? out.image : std::string();
  if (!ptx_ && a.ptx_size(prog, &size) == 0) {
    ptx.resize(size);
    a.ptx(prog, ptx.data());
  }
  out.main_loop = main_loop_mix(ptx);
  a.destroy(&prog);
  return out;
}

namespace {

std::filesystem::path entry_path(const NvrtcCompiler& c, const KernelSource& k, const std::filesystem::path& cache) {
  std::string key = std::string(kGpuImageEntryMagic) + k.source + '\0' + c.version() + '\0' + fmt::format("{}", fmt::join(c.options(), " "));
  for (const EmbeddedFile& f : prelude_files()) key += f.text;
  const XXH128_hash_t h = XXH3_128bits(key.data(), key.size());
  return cache / "nvrtc" / fmt::format("{}-{:016x}{:016x}.bin", k.name, h.high64, h.low64);
}

}  // namespace

std::vector<GpuImage> compile_all(const NvrtcCompiler& compiler, const std::vector<KernelSource>& kernels,
                                  const std::optional<std::filesystem::path>& cache, CompileStats* stats,
                                  unsigned threads) {
  const auto began = std::chrono::steady_clock::now();
  std::vector<GpuImage> out(kernels.size());
  std::atomic<size_t> next{0}, hits{0}, corrupt{0}, unwritten{0};
  std::mutex error_mutex;
  std::optional<KernelCompileError> first_error;
  const std::filesystem::path failed = cache ? *cache / "failed" : std::filesystem::temp_directory_path() / "bertc-failed";
  auto work = [&] {
    for (size_t i = next++; i < kernels.size(); i = next++) {
      try {
        const KernelSource& k = kernels[i];
        std::optional<std::filesystem::path> path;
        if (cache) {
          path = entry_path(compiler, k, *cache);
          if (const std::optional<std::string> bytes = read_cache_entry(*path)) {
            if (auto g = decode_gpu_image_entry(*bytes); g && g->name == k.name) {
              out[i] = std::move(*g);
              out[i].from_cache = true;
              ++hits;
              continue;
            }
            ++corrupt;  // rebuilt below and written over (atomically: a reader meanwhile gets either)
          }
        }
        out[i] = compiler.compile(k, failed);
        if (path && !write_cache_entry(*path, encode_gpu_image_entry(out[i]))) ++unwritten;
      } catch (const KernelCompileError& e) {
        std::lock_guard lock(error_mutex);
        if (!first_error) first_error = e;
        next = kernels.size();  // stop the others early
      } catch (const std::exception& e) {  // (never out of a thread: that would abort the process)
        std::lock_guard lock(error_mutex);
        if (!first_error) first_error = KernelCompileError(fmt::format("compiling kernel {}: {}", kernels[i].name, e.what()));
        next = kernels.size();
      }
    }
  };
  const unsigned n = std::max(1u, std::min<unsigned>(threads ? threads : std::thread::hardware_concurrency(),
                                                     static_cast<unsigned>(kernels.size())));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < n; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (first_error) throw *first_error;
  if (stats) {
    stats->kernels = kernels.size();
    stats->cache_hits = hits;
    stats->corrupt_entries = corrupt;
    stats->unwritten_entries = unwritten;
    stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  }
  return out;
}

}  // namespace bertc::cuda
