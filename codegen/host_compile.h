// Kernel source compiled by the host C++ compiler against the prelude's emulation side, and
// loaded: how generated kernels run (and are tested) on a machine without a GPU.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

#include "codegen/host_emulation.h"
#include "support/shared_library.h"

namespace bertc::codegen {

class KernelCompileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class HostKernelLibrary {
 public:
  HostKernelLibrary(support::SharedLibrary library, std::filesystem::path path);
  // The host entry of kernel `name` (its "<name>__entry" function); throws when absent.
  HostEntry entry(const std::string& name) const;
  const std::filesystem::path& path() const { return path_; }
  // Points the library's kernels at `api`. The loader maps one library file once per process, so
  // two emulators that load the same kernels share it: each installs its api before launching.
  void install(bx_host_api* api) const;

 private:
  support::SharedLibrary library_;
  std::filesystem::path path_;
  void (*install_)(bx_host_api*) = nullptr;
};

// $XDG_CACHE_HOME/bertc, else ~/.cache/bertc, else a folder under the temporary directory.
std::filesystem::path default_cache_folder();

// Compiles the translation unit `source` (which includes "bx.h") with $BERTC_HOST_CXX (default
// c++) into <cache>/host/<hash>.so, unless the same source was compiled there before; loads it
// and installs `api`. Throws KernelCompileError carrying the compiler's output and the path of the
// source it kept.
HostKernelLibrary compile_for_host(const std::string& source, const std::filesystem::path& cache, bx_host_api* api);

}  // namespace bertc::codegen
