// Unit tests for finding NVRTC and the CUDA driver with dlopen: absence is an answer, never a crash.
#include <gtest/gtest.h>

#include <cstdlib>

#include "cuda/nvrtc_library.h"
#include "cuda/cuda_driver.h"
#include "scoped_env.h"

namespace bertc {
namespace {

using testing::ScopedEnv;

TEST(Nvrtc, ForcedPathIsTheOnlyCandidate) {
  ScopedEnv env("BERTC_NVRTC", "/nonexistent/libnvrtc.so.99");
  ASSERT_EQ(cuda::nvrtc_candidates().size(), 1u);
  EXPECT_EQ(cuda::nvrtc_candidates()[0].path, "/nonexistent/libnvrtc.so.99");
  auto probes = cuda::probe_nvrtc_libraries();
  ASSERT_EQ(probes.size(), 1u);
  EXPECT_FALSE(probes[0].found.has_value());
  EXPECT_NE(probes[0].error.find("/nonexistent/libnvrtc.so.99"), std::string::npos) << probes[0].error;
}

TEST(Nvrtc, ALibraryThatIsNotNvrtcIsRefused) {
  ScopedEnv env("BERTC_NVRTC", "libm.so.6");
  auto probes = cuda::probe_nvrtc_libraries();
  ASSERT_EQ(probes.size(), 1u);
  EXPECT_FALSE(probes[0].found.has_value());
  EXPECT_NE(probes[0].error.find("lacks nvrtcVersion"), std::string::npos) << probes[0].error;
}

TEST(Nvrtc, DefaultSearchCoversCuda13ThenCuda12) {
  unsetenv("BERTC_NVRTC");
  auto c = cuda::nvrtc_candidates();
  ASSERT_GE(c.size(), 2u);
  EXPECT_EQ(c[0].path, "libnvrtc.so.13");
  EXPECT_EQ(c[1].path, "libnvrtc.so.12");
}

// Where CUDA 13's NVRTC is installed (the build machines), it must report what FACTS.md says:
// sm_75 and newer, nothing older.
TEST(Nvrtc, Cuda13ReportsItsArchitectures) {
  ScopedEnv env("BERTC_NVRTC", "libnvrtc.so.13");
  auto probes = cuda::probe_nvrtc_libraries();
  ASSERT_EQ(probes.size(), 1u);
  if (!probes[0].found) GTEST_SKIP() << "no CUDA 13 NVRTC here: " << probes[0].error;
  const auto& lib = *probes[0].found;
  EXPECT_EQ(lib.major, 13);
  EXPECT_TRUE(lib.supports(75));
  EXPECT_TRUE(lib.supports(90));
  EXPECT_FALSE(lib.supports(61));
  EXPECT_FALSE(lib.supports(70));
}

// The CUDA 12 wheel that scripts/setup.sh installs is what reaches Pascal and Volta.
TEST(Nvrtc, Cuda12WheelReachesPascalAndVolta) {
  unsetenv("BERTC_NVRTC");
  const std::string wheel = cuda::nvrtc_candidates().back().path;
  ASSERT_NE(wheel.find("nvrtc-cu12"), std::string::npos) << wheel;
  ScopedEnv env("BERTC_NVRTC", wheel.c_str());
  auto probes = cuda::probe_nvrtc_libraries();
  ASSERT_EQ(probes.size(), 1u);
  if (!probes[0].found) GTEST_SKIP() << "no CUDA 12 NVRTC wheel here (run scripts/setup.sh): " << probes[0].error;
  EXPECT_EQ(probes[0].found->major, 12);
  EXPECT_TRUE(probes[0].found->supports(61));
  EXPECT_TRUE(probes[0].found->supports(70));
}

TEST(CudaDriver, ProbeNeverThrows) {
  cuda::CudaDriverProbe probe;
  ASSERT_NO_THROW(probe = cuda::probe_cuda_driver());
  if (!probe.loaded) {
    EXPECT_NE(probe.error.find("libcuda.so.1"), std::string::npos) << probe.error;
    EXPECT_TRUE(probe.devices.empty());
  } else {
    for (const auto& d : probe.devices) EXPECT_GE(d.arch, 30) << d.name;
  }
}

}  // namespace
}  // namespace bertc
