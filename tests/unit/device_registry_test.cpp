// The device table: devices by the name --device takes, with capabilities instead of names for
// callers to ask, and an unknown name refused with the choices.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "ir/out_of_memory.h"
#include "runtime/cublas_library.h"
#include "runtime/device_registry.h"
#include "runtime/host_device.h"

namespace bertc::runtime {
namespace {

TEST(DeviceRegistry, ListsTheDevicesByName) {
  std::vector<std::string_view> names;
  for (const DeviceKind& kind : device_kinds()) {
    names.push_back(kind.name);
    EXPECT_FALSE(kind.description.empty()) << kind.name;
    EXPECT_NE(kind.open, nullptr) << kind.name;
  }
  EXPECT_EQ(names, (std::vector<std::string_view>{"host", "cuda"}));
  EXPECT_EQ(&device_kind("cuda"), &device_kinds()[1]);
}

TEST(DeviceRegistry, RefusesAnUnknownNameListingTheDevices) {
  try {
    device_kind("tpu");
    FAIL() << "an unknown device was found";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "no device 'tpu' (devices: host, cuda)");
  }
}

// The Host device runs the kernels of the arch it is opened for: what callers read instead of
// asking which device it is.
TEST(DeviceRegistry, TheHostDeviceIsNoGpuAndRunsTheArchAskedFor) {
  for (int sm : {0, 80}) {
    const std::shared_ptr<Device> host = open_device("host", {sm, std::filesystem::temp_directory_path()});
    EXPECT_FALSE(host->capabilities().gpu);
    EXPECT_EQ(host->capabilities().sm, sm);
  }
}

// The Host device out of memory says what the buffer was for and its size.
// What the host can still allocate heeds this process's address-space limit (ulimit -v), so that
// --batch-size auto chooses a batch that fits under it: in a child limited to 256 MiB more than
// it maps, at most those 256 MiB (the machine's free memory is larger here).
TEST(DeviceRegistry, HostMemoryHeedsTheAddressSpaceLimit) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    size_t pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    const rlim_t mapped = pages * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)), more = rlim_t{256} << 20;
    const rlimit limit{mapped + more, RLIM_INFINITY};
    ::setrlimit(RLIMIT_AS, &limit);
    std::_Exit(host_available_bytes() <= more ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "more than the limit allows was said to be available";
}

TEST(DeviceRegistry, TheHostDeviceOutOfMemoryNamesTheBuffer) {
  const std::shared_ptr<Device> device = open_device("host", {0, std::filesystem::temp_directory_path()});
  try {
    device->allocate(size_t{1} << 45, "the step graph's activations");
    FAIL() << "32 TiB were allocated";
  } catch (const ir::OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("out of host memory allocating 32768.0 GiB for the step graph's activations on "),
              std::string::npos)
        << e.what();
  }
}

// A probe never throws; what it found (a GPU, or why there is none) is text for the user.
TEST(DeviceRegistry, ProbingTheGpuNeverThrowsAndSaysWhat) {
  const DeviceProbe probe = device_kind("cuda").probe();
  EXPECT_FALSE(probe.found.empty());
  if (!probe.usable) {
    EXPECT_THROW(open_device("cuda", {}), std::runtime_error);
  }
}

// cuBLAS is looked for where NVRTC was found too: a toolkit's lib64, and the PyPI wheels' layout
// (the GPU machine's PyTorch brings its cuBLAS there, off the loader's path).
TEST(CublasLibrary, LooksBesideEachNvrtcAndInTheWheelLayout) {
  ::unsetenv("BERTC_CUBLAS");
  const auto c = cublas_candidates({"/usr/local/cuda/lib64/libnvrtc.so.13",
                                    "/venv/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"});
  EXPECT_EQ(c, (std::vector<std::string>{"libcublas.so.13", "libcublas.so.12", "/usr/local/cuda/lib64/libcublas.so.13",
                                         "/usr/local/cuda/lib64/libcublas.so.12",
                                         "/venv/site-packages/nvidia/cuda_nvrtc/lib/libcublas.so.13",
                                         "/venv/site-packages/nvidia/cuda_nvrtc/lib/libcublas.so.12",
                                         "/venv/site-packages/nvidia/cublas/lib/libcublas.so.13",
                                         "/venv/site-packages/nvidia/cublas/lib/libcublas.so.12",
                                         "/venv/site-packages/nvidia/cu13/lib/libcublas.so.13",
                                         "/venv/site-packages/nvidia/cu13/lib/libcublas.so.12"}));
  ::setenv("BERTC_CUBLAS", "/opt/my/libcublas.so.12", 1);
  EXPECT_EQ(cublas_candidates({"/usr/local/cuda/lib64/libnvrtc.so.13"}), (std::vector<std::string>{"/opt/my/libcublas.so.12"}));
  // A file that is not there is reported with the dynamic loader's reason, never thrown.
  ::setenv("BERTC_CUBLAS", "/nonexistent/libcublas.so.12", 1);
  const CublasProbe probe = find_cublas();
  EXPECT_FALSE(probe.library.loaded());
  ASSERT_EQ(probe.tried.size(), 1u);
  EXPECT_EQ(probe.tried[0].rfind("/nonexistent/libcublas.so.12: ", 0), 0u) << probe.tried[0];
  ::unsetenv("BERTC_CUBLAS");
}

}  // namespace
}  // namespace bertc::runtime
