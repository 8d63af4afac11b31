// support/library_search: one search for NVRTC, cuBLAS and NCCL, tried against fake trees laid out
// as a virtualenv, a conda environment, pip's --user site, a python3 on PATH, a CUDA toolkit and
// a bundle beside the program, each found and said with where it came from.
#include "support/library_search.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>

#include "cuda/nvrtc_library.h"
#include "cuda/nccl_library.h"
#include "cuda/cublas_library.h"

namespace bertc::support {
namespace {

namespace fs = std::filesystem;

// A fresh tree of this process's own, removed at the end of the test.
struct FakeTree {
  fs::path root = fs::temp_directory_path() / ("bertc-library-search-" + std::to_string(::getpid()));
  FakeTree() {
    fs::remove_all(root);
    fs::create_directories(root);
  }
  ~FakeTree() { fs::remove_all(root); }
  fs::path touch(const fs::path& relative) const {
    const fs::path p = root / relative;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << "not a real library\n";
    return p;
  }
};

// Places with nothing of the machine's own: only what a test gives them.
SearchPlaces places(std::map<std::string, std::string> env, fs::path executable = {}) {
  SearchPlaces p;
  p.env = [env](const char* name) {
    const auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
  p.executable = std::move(executable);
  return p;
}

std::vector<std::string> paths(const std::vector<LibraryCandidate>& c) {
  std::vector<std::string> out;
  for (const auto& x : c) out.push_back(x.path);
  return out;
}

const LibraryLayout kNvrtc = cuda::nvrtc_layout();

TEST(LibrarySearch, AnOverrideIsTheOnlyCandidate) {
  const auto c = library_candidates(kNvrtc, places({{"BERTC_NVRTC", "/opt/x/libnvrtc.so"}}));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].path, "/opt/x/libnvrtc.so");
  EXPECT_EQ(c[0].origin, "$BERTC_NVRTC");
}

TEST(LibrarySearch, FindsWheelsInEveryKindOfPythonEnvironment) {
  FakeTree t;
  const fs::path venv = t.touch("venv/lib/python3.11/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12");
  const fs::path conda = t.touch("conda/lib/python3.12/site-packages/nvidia/cu13/lib/libnvrtc.so.13");
  const fs::path user = t.touch("home/.local/lib/python3.10/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12");
  t.touch("other/bin/python3");  // a python3 on PATH: its environment is the folder above bin/
  const fs::path on_path = t.touch("other/lib/python3.9/dist-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12");
  const fs::path absent = t.root / "venv/lib/python3.11/site-packages/nvidia/cu13/lib/libnvrtc.so.13";
  const auto c = library_candidates(kNvrtc, places({{"VIRTUAL_ENV", (t.root / "venv").string()},
                                                    {"CONDA_PREFIX", (t.root / "conda").string()},
                                                    {"HOME", (t.root / "home").string()},
                                                    {"PATH", "/nonexistent:" + (t.root / "other/bin").string()}}));
  // The loader's path first (sonames), then the .so.13 that exist, then the .so.12, each place in turn.
  EXPECT_EQ(paths(c), (std::vector<std::string>{"libnvrtc.so.13", "libnvrtc.so.12", conda.string(), venv.string(),
                                                on_path.string(), user.string()}));
  EXPECT_EQ(c[0].origin, "the loader's path (LD_LIBRARY_PATH, ldconfig)");
  EXPECT_EQ(c[2].origin, "$CONDA_PREFIX (" + (t.root / "conda").string() + ")");
  EXPECT_EQ(c[3].origin, "$VIRTUAL_ENV (" + (t.root / "venv").string() + ")");
  EXPECT_EQ(c[4].origin, "python3 on $PATH (" + (t.root / "other").string() + ")");
  EXPECT_EQ(c[5].origin, "the user's site (pip install --user) (" + (t.root / "home/.local").string() + ")");
  for (const auto& x : c) EXPECT_NE(x.path, absent.string()) << "a file that is not there is no candidate";
}

TEST(LibrarySearch, FindsToolkitsAndWhatTravelsWithTheProgram) {
  FakeTree t;
  const fs::path home = t.touch("cuda-home/lib64/libcublas.so.12");
  const fs::path toolkit = t.touch("cuda-13.0/targets/x86_64-linux/lib/libcublas.so.13");
  const fs::path bundle = t.touch("bundle/lib/libcublas.so.12");
  SearchPlaces p = places({{"CUDA_HOME", (t.root / "cuda-home").string()}}, t.root / "bundle/bertc");
  p.toolkits = {t.root / "cuda-13.0"};
  const auto c = library_candidates(cuda::cublas_layout(), p);
  EXPECT_EQ(paths(c), (std::vector<std::string>{"libcublas.so.13", "libcublas.so.12", toolkit.string(), home.string(),
                                                bundle.string()}));
  EXPECT_EQ(c[2].origin, "the CUDA toolkit " + (t.root / "cuda-13.0").string());
  EXPECT_EQ(c[4].origin, "beside the running program (" + (t.root / "bundle").string() + ")");
}

// A build moved with its checkout finds the wheels scripts/setup.sh put in the checkout's .deps/,
// not only at the path the build was configured in (which is gone once moved).
TEST(LibrarySearch, FindsTheCheckoutsDepsAboveAMovedBuild) {
  FakeTree t;
  const fs::path deps = t.touch("moved-checkout/.deps/nccl-cu12/nvidia/nccl/lib/libnccl.so.2");
  SearchPlaces p = places({}, t.root / "moved-checkout/build/tools/bertc");
  p.built_deps = "/where/it/was/built/.deps";
  const auto c = library_candidates(cuda::nccl_layout(), p);
  EXPECT_EQ(paths(c), (std::vector<std::string>{"libnccl.so.2", deps.string()}));
  EXPECT_EQ(c[1].origin, ".deps/ above the running program (" + (t.root / "moved-checkout/build/tools").string() + ")");
}

TEST(LibrarySearch, AFileReachedTwiceIsListedOnce) {
  FakeTree t;
  const fs::path real = t.touch("cuda-12.9/lib64/libnvrtc.so.12");
  fs::create_directory_symlink(t.root / "cuda-12.9", t.root / "cuda");
  SearchPlaces p = places({{"CUDA_PATH", (t.root / "cuda").string()}});
  p.toolkits = {t.root / "cuda-12.9"};
  const auto c = library_candidates(kNvrtc, p);
  ASSERT_EQ(c.size(), 3u) << "the toolkit through its link and by its name is one file";
  EXPECT_EQ(c[2].path, (t.root / "cuda/lib64/libnvrtc.so.12").string());
}

TEST(LibrarySearch, TriedTextNamesThePlaceOnce) {
  const LibraryCandidate c{"libx.so.1", "the loader's path"};
  EXPECT_EQ(tried_text(c, "libx.so.1: cannot open shared object file"),
            "libx.so.1 [the loader's path]: cannot open shared object file");
  EXPECT_EQ(tried_text(c, "lacks xInit"), "libx.so.1 [the loader's path]: lacks xInit");
}

}  // namespace
}  // namespace bertc::support
