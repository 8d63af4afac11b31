// Host compilation of kernel sources: prelude on disk, one compiler run per distinct source.
#include "codegen/host_compile.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <fstream>
#include <iterator>
#include <vector>

#include <fmt/format.h>
#include <xxhash.h>

#include "codegen/kernel_cache.h"
#include "codegen/prelude.h"
#include "support/atomic_file.h"
#include "support/child_process.h"

namespace bertc::codegen {
namespace {

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string host_compiler() {
  const char* cxx = std::getenv("BERTC_HOST_CXX");
  return cxx && *cxx ? cxx : "c++";
}

// -O1: kernels are large switch-free loops; more optimisation buys little and costs compile time.
// -ffp-contract=off (ISO C++'s default): each a*b+c rounds twice, the reference's way. A GPU's
// compiler contracts it into one FMA (one rounding); BERTC_HOST_FP_CONTRACT=fast compiles the
// kernels so (with the host's FMA instructions: -mfma), and tests/lit/train_host.test checks that
// training stays within its tolerances either way.
std::vector<std::string> host_flags() {
  std::vector<std::string> flags = {"-std=c++17", "-O1", "-shared", "-fPIC", "-w", "-DBX_HOST_LIBRARY"};
  const char* contract = std::getenv("BERTC_HOST_FP_CONTRACT");
  const std::string mode = contract ? contract : "";
  if (mode == "fast") {
    // (GCC contracts in a pass that -O1 runs only with -fexpensive-optimizations)
    flags.insert(flags.end(), {"-ffp-contract=fast", "-fexpensive-optimizations"});
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("fma"))
      throw KernelCompileError("BERTC_HOST_FP_CONTRACT=fast contracts into this CPU's FMA instructions, and it has "
                               "none: unset it");
    flags.push_back("-mfma");  // (x86's FMA is an extension; other 64-bit hosts have it always)
#endif
  }
  else if (!mode.empty() && mode != "off")
    throw KernelCompileError(fmt::format("BERTC_HOST_FP_CONTRACT={}: it is fast (a*b+c contracted into one FMA, as "
                                         "on a GPU) or off (the default): set one of these, or unset it",
                                         mode));
  else flags.push_back("-ffp-contract=off");
  return flags;
}

}  // namespace

HostKernelLibrary::HostKernelLibrary(support::SharedLibrary library, std::filesystem::path path)
    : library_(std::move(library)), path_(std::move(path)),
      install_(library_.function<void (*)(bx_host_api*)>("bx_install")) {
  if (!install_) throw KernelCompileError(fmt::format("{} has no bx_install: not a bertc kernel library", path_.string()));
}

HostEntry HostKernelLibrary::entry(const std::string& name) const {
  auto fn = library_.function<HostEntry>((name + "__entry").c_str());
  if (!fn) throw KernelCompileError(fmt::format("{} has no kernel {}", path_.string(), name));
  return fn;
}

void HostKernelLibrary::install(bx_host_api* api) const { install_(api); }

std::filesystem::path default_cache_folder() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::filesystem::path(xdg) / "bertc";
  if (const char* home = std::getenv("HOME"); home && *home) return std::filesystem::path(home) / ".cache" / "bertc";
  return std::filesystem::temp_directory_path() / "bertc-cache";
}

namespace {

std::string checksum_of(const std::string& bytes) { return fmt::format("{:016x}\n", XXH3_64bits(bytes.data(), bytes.size())); }

// Whether `library` is whole: a regular file whose bytes match the checksum written beside it once
// it was complete (a truncated or flipped library would crash the loader, not fail it).
bool library_intact(const std::filesystem::path& library, const std::filesystem::path& sum) {
  const std::optional<std::string> bytes = read_cache_entry(library), expected = read_cache_entry(sum);
  return bytes && expected && checksum_of(*bytes) == *expected;
}

std::string this_host() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 && name[0] ? name : "localhost";
}

// A build's library before it is whole: STEM.HOST-PID.so.tmp (the host too: a cache on a shared
// file system may hold another machine's build, whose pid says nothing here).
std::string partial_name(const std::string& stem, const std::string& host, pid_t pid) {
  return fmt::format("{}.{}-{}.so.tmp", stem, host, pid);
}

// Removes the part-made libraries of this host's builds whose process is gone (killed, or ended at
// once by a second signal): otherwise they would stay in the cache for good.
void sweep_dead_builds(const std::filesystem::path& folder) {
  const std::string host = this_host();
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    const size_t dot = name.find('.'), dash = name.rfind('-');
    if (!name.ends_with(".so.tmp") || dot == std::string::npos || dash == std::string::npos || dash < dot ||
        name.compare(dot + 1, dash - dot - 1, host) != 0)
      continue;
    const std::string pid = name.substr(dash + 1, name.size() - dash - 1 - std::string(".so.tmp").size());
    char* end = nullptr;
    const long value = std::strtol(pid.c_str(), &end, 10);
    if (!pid.empty() && !*end && value > 0 && ::kill(static_cast<pid_t>(value), 0) != 0 && errno == ESRCH) {
      std::error_code ignored;
      std::filesystem::remove(entry.path(), ignored);
    }
  }
}

// Compiles `source` into `folder`/`stem`.so (through a private name, then a rename), with its
// checksum beside it. Throws KernelCompileError for the compiler's failure, std::exception for
// the folder's.
void build_library(const std::string& source, const std::filesystem::path& folder, const std::string& stem,
                   const std::string& compiler) {
  const std::filesystem::path library = folder / (stem + ".so"), source_path = folder / (stem + ".cpp");
  const std::filesystem::path prelude = folder / "prelude";
  make_cache_folder(folder);  // (private; refused when others could write it: a library is loaded from it)
  write_prelude(prelude);
  support::write_file_atomically(source_path, source);
  // A concurrent or interrupted build leaves no half library under the library's name.
  sweep_dead_builds(folder);
  const std::filesystem::path partial = folder / partial_name(stem, this_host(), ::getpid());
  const std::filesystem::path log = folder / (stem + ".log");
  std::vector<std::string> argv = {compiler};
  const std::vector<std::string> flags = host_flags();
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"-I", prelude.string(), source_path.string(), "-o", partial.string()});
  const support::ChildEnd end = support::run_child(argv, log);
  if (end.status != 0 || !end.failure.empty()) {
    std::error_code ec;
    std::filesystem::remove(partial, ec);
    const bool from_variable = std::getenv("BERTC_HOST_CXX") != nullptr;
    if (end.failure.starts_with("cannot be run"))
      throw KernelCompileError(fmt::format(
          "the host C++ compiler '{}'{} {}: {}the Host device compiles its kernels with one (C++17): install one "
          "(apt-get install g++), or set BERTC_HOST_CXX to its path{}",
          compiler, from_variable ? " (BERTC_HOST_CXX)" : "", end.failure,
          // (a command line in the variable is run as one program's name)
          from_variable && compiler.find(' ') != std::string::npos
              ? "BERTC_HOST_CXX takes one program's path, not a command line with flags (BERTC_HOST_CXX=g++); "
              : "",
          from_variable ? " (or unset it: c++ then)" : ""));
    const std::string said = read_text(log);
    // (a compiler that fails without a word, /bin/false, is no working compiler: said with the fix)
    if (said.find_first_not_of(" \t\r\n") == std::string::npos)
      throw KernelCompileError(fmt::format("the host compiler '{}'{} failed on {} ({}) and said nothing: it is not a "
                                           "working C++ compiler: {}",
                                           compiler, from_variable ? " (BERTC_HOST_CXX)" : "", source_path.string(),
                                           end.failure.empty() ? fmt::format("exit {}", end.status) : end.failure,
                                           from_variable ? "set BERTC_HOST_CXX to one (g++), or unset it"
                                                         : "install one (apt-get install g++)"));
    throw KernelCompileError(fmt::format("the host compiler ({}) failed on {} ({}):\n{}", compiler,
                                         source_path.string(),
                                         end.failure.empty() ? fmt::format("exit {}", end.status) : end.failure, said));
  }
  // (a "compiler" that ends well without writing -o — /bin/true — is no compiler: said as such,
  // not as the permissions of a file that is not there)
  std::error_code made;
  if (!std::filesystem::is_regular_file(partial, made) || std::filesystem::file_size(partial, made) == 0) {
    std::filesystem::remove(partial, made);
    throw KernelCompileError(fmt::format("the host compiler '{}'{} exited 0 but wrote no library (-o {}): it is not a "
                                         "working C++ compiler: {}",
                                         compiler, std::getenv("BERTC_HOST_CXX") ? " (BERTC_HOST_CXX)" : "",
                                         partial.string(),
                                         std::getenv("BERTC_HOST_CXX") ? "set BERTC_HOST_CXX to one (g++), or unset it"
                                                                       : "install one (apt-get install g++)"));
  }
  // Not writable by the group or others whatever the umask (002 leaves the compiler's output
  // group-writable): the cache would not trust it (kernel_cache.h).
  std::filesystem::permissions(partial, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                                            std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                                            std::filesystem::perms::others_exec);
  const std::string sum = checksum_of(read_text(partial));
  // rename() replaces a damaged file atomically (a process loading it meanwhile gets the old or the
  // new one, both whole); only a folder in its place must go first.
  std::error_code ec;
  if (std::filesystem::is_directory(std::filesystem::symlink_status(library, ec))) remove_cache_entry(library);
  std::filesystem::rename(partial, library);
  support::write_file_atomically(folder / (stem + ".so.xxh3"), sum);
}

}  // namespace

HostKernelLibrary compile_for_host(const std::string& source, const std::filesystem::path& cache, bx_host_api* api) {
  const std::string compiler = host_compiler();
  std::string key = source + compiler;
  for (const std::string& f : host_flags()) key += f;
  for (const EmbeddedFile& f : prelude_files()) key += f.text;
  const std::string stem = fmt::format("{:016x}", XXH3_64bits(key.data(), key.size()));
  std::filesystem::path folder = cache / "host";
  if (!library_intact(folder / (stem + ".so"), folder / (stem + ".so.xxh3"))) {
    try {
      build_library(source, folder, stem, compiler);
    } catch (const KernelCompileError&) {
      throw;
    } catch (const std::exception& e) {
      // The cache cannot take it: build in a private folder of this process instead.
      warn_cache_unusable(folder, e.what());
      std::string private_folder = (std::filesystem::temp_directory_path() / "bertc-host-XXXXXX").string();
      if (!::mkdtemp(private_folder.data()))
        throw KernelCompileError(fmt::format("neither the kernel cache {} nor a temporary folder can take the host "
                                             "kernel library ({}): free some disk or set XDG_CACHE_HOME",
                                             folder.string(), e.what()));
      folder = private_folder;
      try {
        build_library(source, folder, stem, compiler);
      } catch (...) {  // (the private folder is this process's alone: nothing of it stays)
        std::error_code ec;
        std::filesystem::remove_all(folder, ec);
        throw;
      }
    }
  }
  const std::filesystem::path library = folder / (stem + ".so");
  std::string error;
  support::SharedLibrary lib = support::SharedLibrary::open(std::filesystem::absolute(library).string(), &error);
  // A private folder goes once its library is loaded (the mapping outlives the file).
  if (folder != cache / "host") {
    std::error_code ec;
    std::filesystem::remove_all(folder, ec);
  }
  if (!lib.loaded()) {
    // (a library the compiler made that does not load would fail every later run the same way
    // from the cache: removed, so that a working compiler builds it anew)
    if (folder == cache / "host") {
      remove_cache_entry(library);
      remove_cache_entry(folder / (stem + ".so.xxh3"));
    }
    throw KernelCompileError(fmt::format("cannot load {}, which the host compiler '{}'{} made: {}: it is not a working "
                                         "C++ compiler for this machine (removed from the cache): {}",
                                         library.string(), compiler,
                                         std::getenv("BERTC_HOST_CXX") ? " (BERTC_HOST_CXX)" : "", error,
                                         std::getenv("BERTC_HOST_CXX") ? "set BERTC_HOST_CXX to one (g++), or unset it"
                                                                       : "install one (apt-get install g++)"));
  }
  HostKernelLibrary loaded(std::move(lib), library);
  loaded.install(api);
  return loaded;
}

}  // namespace bertc::codegen
