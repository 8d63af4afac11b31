// The device table: devices by the name --device takes, with capabilities instead of names for
// callers to ask, and an unknown name refused with the choices.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "codegen/launch_limits.h"
#include "ir/out_of_memory.h"
#include "cuda/cublas_library.h"
#include "runtime/device_target.h"
#include "devices/device_registry.h"
#include "runtime/host_device.h"
#include "cuda/module_loading.h"

namespace bertc::runtime {
namespace {

TEST(DeviceRegistry, ListsTheDevicesByName) {
  std::vector<std::string_view> names;
  for (const devices::DeviceKind& kind : devices::device_kinds()) {
    names.push_back(kind.name);
    EXPECT_FALSE(kind.description.empty()) << kind.name;
    EXPECT_NE(kind.open, nullptr) << kind.name;
  }
  EXPECT_EQ(names, (std::vector<std::string_view>{"host", "ptx", "cuda"}));
  EXPECT_EQ(&devices::device_kind("cuda"), &devices::device_kinds()[2]);
  EXPECT_FALSE(devices::device_kind("ptx").chosen_automatically);  // (an emulator: --device auto never picks it)
}

TEST(DeviceRegistry, RefusesAnUnknownNameListingTheDevices) {
  try {
    devices::device_kind("tpu");
    FAIL() << "an unknown device was found";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "no device 'tpu' (devices: host, ptx, cuda)");
  }
}

// The Host device runs the kernels of the arch it is opened for: what callers read instead of
// asking which device it is.
TEST(DeviceRegistry, TheHostDeviceIsNoGpuAndRunsTheArchAskedFor) {
  for (int sm : {0, 80}) {
    const std::shared_ptr<Device> host = devices::open_device("host", {sm, std::filesystem::temp_directory_path()});
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
  const std::shared_ptr<Device> device = devices::open_device("host", {0, std::filesystem::temp_directory_path()});
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
  const devices::DeviceProbe probe = devices::device_kind("cuda").probe();
  EXPECT_FALSE(probe.found.empty());
  if (!probe.usable) {
    EXPECT_THROW(devices::open_device("cuda", {}), std::runtime_error);
  }
}

// cuBLAS: the search's candidates (support/library_search, tested on fake trees), a missing file
// reported with the loader's reason, never thrown.
TEST(CublasLibrary, AMissingFileIsReportedNotThrown) {
  ::setenv("BERTC_CUBLAS", "/nonexistent/libcublas.so.12", 1);
  ASSERT_EQ(cuda::cublas_candidates().size(), 1u);
  const cuda::CublasProbe probe = cuda::find_cublas();
  EXPECT_FALSE(probe.library.loaded());
  ASSERT_EQ(probe.tried.size(), 1u);
  EXPECT_EQ(probe.tried[0].rfind("/nonexistent/libcublas.so.12 [$BERTC_CUBLAS]: ", 0), 0u) << probe.tried[0];
  ::unsetenv("BERTC_CUBLAS");
}

// A cuBLAS of a newer CUDA than the driver's is passed over, saying why (cublasCreate would fail
// with a bare status), and taken by a driver of its version. Needs a real cuBLAS (the toolkit's).
TEST(CublasLibrary, TakesOnlyACublasTheDriverRuns) {
  ::unsetenv("BERTC_CUBLAS");
  const cuda::CublasProbe any = cuda::find_cublas();
  if (!any.library.loaded()) GTEST_SKIP() << "no cuBLAS on this machine";
  ASSERT_GE(any.major, 12);
  ::setenv("BERTC_CUBLAS", any.library.path().c_str(), 1);
  const int older = (any.major - 1) * 1000 + 40;  // e.g. a CUDA 12.4 driver for a cuBLAS 13
  const cuda::CublasProbe refused = cuda::find_cublas(older);
  EXPECT_FALSE(refused.library.loaded());
  ASSERT_EQ(refused.tried.size(), 1u);
  EXPECT_NE(refused.tried[0].find(fmt::format("cuBLAS {}.{} needs a CUDA {} driver, and this driver supports CUDA {}.4",
                                              any.major, any.minor, any.major, any.major - 1)),
            std::string::npos)
      << refused.tried[0];
  EXPECT_NE(refused.tried[0].find(fmt::format("pip install nvidia-cublas-cu{}", any.major - 1)), std::string::npos);
  EXPECT_TRUE(cuda::find_cublas(any.major * 1000).library.loaded());
  // Its statuses by their names, from cuBLAS itself (cublas_api.h: 7 is CUBLAS_STATUS_INVALID_VALUE).
  EXPECT_EQ(cuda::cublas_status_text(any, 7).rfind("CUBLAS_STATUS_INVALID_VALUE (7)", 0), 0u) << cuda::cublas_status_text(any, 7);
  ::unsetenv("BERTC_CUBLAS");
}

// Products are planned for cuBLAS only where the device has one it runs: matmul = auto falls back
// to generated kernels saying why, matmul = library is refused naming the fix.
TEST(DeviceTarget, KeepsProductsOffAMissingCublas) {
  passes::CompileOptions options;
  options.matmul = passes::MatmulPolicy::Auto;
  std::string note;
  EXPECT_EQ(device_render_target(options, {true, 80, ""}, &note).matmul, passes::MatmulPolicy::Auto);
  EXPECT_TRUE(note.empty());
  const DeviceCapabilities none{true, 80, "no cuBLAS that this driver runs was found"};
  EXPECT_EQ(device_render_target(options, none, &note).matmul, passes::MatmulPolicy::Generated);
  EXPECT_NE(note.find("every product is a generated kernel: no cuBLAS"), std::string::npos) << note;
  options.matmul = passes::MatmulPolicy::Library;
  try {
    device_render_target(options, none, &note);
    FAIL() << "matmul = library accepted without cuBLAS";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--matmul generated"), std::string::npos) << e.what();
  }
}

// A stand-in for the driver's cuModuleLoadDataEx that reads its options as cuda.h defines them
// (CU_JIT_ERROR_LOG_BUFFER 5 with its size 6, CU_JIT_INFO_LOG_BUFFER 3 with 4) and refuses the
// PTX as the JIT does, writing ptxas' message into the error log.
int refusing_jit(void** module, const void* image, unsigned n, int* options, void** values) {
  *module = nullptr;
  char* error = nullptr;
  size_t error_size = 0;
  for (unsigned i = 0; i < n; ++i) {
    if (options[i] == 5) error = static_cast<char*>(values[i]);
    if (options[i] == 6) error_size = reinterpret_cast<uintptr_t>(values[i]);
  }
  if (!error || error_size < 64 || std::string(static_cast<const char*>(image)).find(".target sm_61") == std::string::npos)
    return 1;  // CUDA_ERROR_INVALID_VALUE: the options were not as the driver reads them
  std::snprintf(error, error_size, "ptxas fatal   : SM version specified by .target is higher than default\n");
  return 218;  // CUDA_ERROR_INVALID_PTX
}

TEST(ModuleLoading, AsksTheJitForItsLogAndSaysIt) {
  void* module = nullptr;
  const cuda::ModuleLoad load = cuda::load_module(refusing_jit, &module, ".version 8.0\n.target sm_61\n");
  EXPECT_EQ(load.result, 218);
  EXPECT_EQ(load.error_log, "ptxas fatal   : SM version specified by .target is higher than default");
  EXPECT_EQ(cuda::jit_log_text(load), "; the driver's JIT said: " + load.error_log);
  EXPECT_EQ(cuda::jit_log_text(cuda::ModuleLoad{}), "") << "a JIT that said nothing adds nothing";
}

// A launch a GPU would refuse (over 1024 threads a block, a grid's y past 65535, an empty
// dimension) is refused by the Host device too, naming the kernel and the limit: the emulation
// would run any shape.
TEST(HostDevice, RefusesLaunchesAGpuWouldRefuse) {
  const std::shared_ptr<Device> host = devices::open_device("host", {80, std::filesystem::temp_directory_path()});
  codegen::KernelSpec k;
  k.name = "k_wide";
  k.label = "a test";
  auto refusal = [&] {
    try {
      host->launch(k, nullptr);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  k.block = {2048, 1, 1};
  EXPECT_NE(refusal().find("kernel k_wide (a test): a GPU would refuse its launch: its block of 2048 threads is over "
                           "the 1024 a block may have on sm_80"),
            std::string::npos)
      << refusal();
  k.block = {256, 1, 1}, k.grid = {1, 70000, 1};
  EXPECT_NE(refusal().find("is over (2147483647, 65535, 65535), the largest grid dimensions"), std::string::npos);
  k.grid = {0, 1, 1};
  EXPECT_NE(refusal().find("has an empty dimension"), std::string::npos);
  EXPECT_FALSE(codegen::launch_problem(codegen::KernelSpec{.grid = {4096, 12, 1}, .block = {256, 1, 1}}, 61));
}

}  // namespace
}  // namespace bertc::runtime
