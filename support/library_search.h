// One search for the libraries bertc dlopens (NVRTC, cuBLAS, NCCL) wherever a stranger's machine
// keeps them: an override, the loader's path, CUDA toolkits, Python environments' wheels (a
// virtualenv, conda, the user's and the system's site-packages) and folders beside the running
// bertc; each candidate says where it came from, so `bertc info` can show the whole search.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace bertc::support {

// Where one library lives in each kind of installation.
struct LibraryLayout {
  std::string override_variable;           // e.g. "BERTC_NVRTC": when set, the only candidate
  std::vector<std::string> sonames;        // in order of preference, e.g. libnvrtc.so.13, libnvrtc.so.12
  std::vector<std::string> wheel_folders;  // under site-packages, e.g. nvidia/cuda_nvrtc/lib
  std::string deps_folder;                 // under a checkout's .deps/ (scripts/setup.sh's wheels)
};

struct LibraryCandidate {
  std::string path;    // a soname left to the loader's own search, else a file that exists
  std::string origin;  // where it came from, e.g. "$VIRTUAL_ENV (/home/a/venv)"
};

// What the search reads from the process: a parameter, so that tests point it at fake trees.
struct SearchPlaces {
  std::function<std::string(const char*)> env;            // an environment variable, "" when unset
  std::filesystem::path executable;                       // the running program
  std::vector<std::filesystem::path> toolkits;            // CUDA toolkit roots, in order
  std::vector<std::filesystem::path> python_prefixes;     // system prefixes holding lib/python3.*/
  std::filesystem::path built_deps;                       // the build's own .deps/ (may be gone)

  // This process's environment, /proc/self/exe, /usr/local/cuda then /usr/local/cuda-* (newest
  // first), /usr/local, /usr and /opt/conda, and the .deps/ the build was configured with.
  static SearchPlaces of_this_process();
};

// Every candidate, in order: $override alone when set; else each soname on the loader's path;
// then, for each soname in turn, the files that exist in $CUDA_HOME, $CUDA_PATH and the toolkits
// (lib64/, lib/, targets/x86_64-linux/lib/), in the Python environments ($VIRTUAL_ENV,
// $CONDA_PREFIX, each python3 on $PATH, ~/.local, the system prefixes: every
// lib/python3.*/{site,dist}-packages/WHEEL_FOLDER), beside the running program (lib/ and ../lib/
// next to it, and .deps/ in the folders above it) and in the build's .deps/. A file reached
// twice is listed once, at its first place.
std::vector<LibraryCandidate> library_candidates(const LibraryLayout& layout,
                                                 const SearchPlaces& places = SearchPlaces::of_this_process());

// "PATH [ORIGIN]: WHY", for a list of what was tried (the loader's repetition of PATH left out).
std::string tried_text(const LibraryCandidate& candidate, const std::string& why);

}  // namespace bertc::support
