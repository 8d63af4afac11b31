// Unit tests for finding NCCL and joining it: absence is an answer, a machine without a GPU gets a
// clear refusal, never a crash or a hang.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <vector>
#include <string>

#include "distributed/communicator.h"
#include "cuda/nccl_library.h"
#include "cuda/nccl_sums.h"
#include "scoped_env.h"

namespace bertc {
namespace {

using testing::ScopedEnv;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Nccl, ForcedPathIsTheOnlyCandidate) {
  ScopedEnv env("BERTC_NCCL", "/nonexistent/libnccl.so.2");
  ASSERT_EQ(cuda::nccl_candidates().size(), 1u);
  EXPECT_EQ(cuda::nccl_candidates()[0].path, "/nonexistent/libnccl.so.2");
  const cuda::NcclProbe probe = cuda::find_nccl();
  EXPECT_FALSE(probe.library.loaded());
  ASSERT_EQ(probe.tried.size(), 1u);
  EXPECT_TRUE(contains(probe.tried[0], "/nonexistent/libnccl.so.2")) << probe.tried[0];
}

TEST(Nccl, ALibraryThatIsNotNcclIsRefused) {
  ScopedEnv env("BERTC_NCCL", "libm.so.6");
  const cuda::NcclProbe probe = cuda::find_nccl();
  EXPECT_FALSE(probe.library.loaded());
  ASSERT_EQ(probe.tried.size(), 1u);
  EXPECT_TRUE(contains(probe.tried[0], "lacks ncclGetVersion")) << probe.tried[0];
}

TEST(Nccl, DefaultSearchStartsOnTheLoadersPathAndReachesTheWheelInDeps) {
  unsetenv("BERTC_NCCL");
  const std::vector<support::LibraryCandidate> c = cuda::nccl_candidates();
  ASSERT_GE(c.size(), 2u);
  EXPECT_EQ(c[0].path, "libnccl.so.2");
  if (!std::filesystem::exists(BERTC_DEPS_DIR "/nccl-cu12/nvidia/nccl/lib/libnccl.so.2"))
    GTEST_SKIP() << "no NCCL wheel in .deps (run scripts/setup.sh)";
  bool deps = false;
  for (const auto& x : c) deps = deps || contains(x.path, ".deps/nccl-cu12/nvidia/nccl/lib/libnccl.so.2");
  EXPECT_TRUE(deps);
}

TEST(Nccl, VersionCodesReadAsNcclWritesThem) {
  EXPECT_EQ(cuda::nccl_version_text(23203), "2.32.3");  // NCCL_VERSION(2,32,3) since 2.9
  EXPECT_EQ(cuda::nccl_version_text(21903), "2.19.3");
  EXPECT_EQ(cuda::nccl_version_text(2804), "2.8.4");    // the older X*1000+Y*100+Z
}

// The wheel scripts/setup.sh installs: found, bound, and a 2.x version (it loads without a GPU).
TEST(Nccl, TheWheelLoadsAndReportsItsVersion) {
  ScopedEnv env("BERTC_NCCL", BERTC_DEPS_DIR "/nccl-cu12/nvidia/nccl/lib/libnccl.so.2");
  const cuda::NcclProbe probe = cuda::find_nccl();
  if (!probe.library.loaded()) GTEST_SKIP() << "no NCCL wheel in .deps (run scripts/setup.sh): " << probe.tried.at(0);
  EXPECT_GE(probe.version, 20900);
  EXPECT_EQ(cuda::nccl_version_text(probe.version).substr(0, 2), "2.");
}

// Joining NCCL where there is no GPU: a RankError naming ncclCommInitRank and the way out
// (allreduce = "host"), not a crash, and the watchdog thread is stopped again.
TEST(Nccl, JoiningWithoutAGpuIsRefusedWithTheFix) {
  ScopedEnv env("BERTC_NCCL", BERTC_DEPS_DIR "/nccl-cu12/nvidia/nccl/lib/libnccl.so.2");
  if (!cuda::find_nccl().library.loaded()) GTEST_SKIP() << "no NCCL wheel in .deps (run scripts/setup.sh)";
  ScopedEnv no_gpu("CUDA_VISIBLE_DEVICES", "");  // no GPU, even on a GPU machine
  const auto one = distributed::single_process();
  try {
    cuda::NcclSums sums(*one, 30);
    FAIL() << "NCCL joined without a GPU";
  } catch (const distributed::RankError& e) {
    EXPECT_TRUE(contains(e.what(), "ncclCommInitRank failed")) << e.what();
    EXPECT_TRUE(contains(e.what(), "allreduce = \"host\"")) << e.what();
  }
}

// BERTC_NCCL_ONE_RANK_WORK (the GPU check's: ncclAvg, which is the sum only on one rank) on one
// rank goes on to the join (refused here for the missing GPU), and on two is refused before it.
TEST(Nccl, OneRankWorkIsForOneRankOnly) {
  ScopedEnv env("BERTC_NCCL", BERTC_DEPS_DIR "/nccl-cu12/nvidia/nccl/lib/libnccl.so.2");
  if (!cuda::find_nccl().library.loaded()) GTEST_SKIP() << "no NCCL wheel in .deps (run scripts/setup.sh)";
  ScopedEnv no_gpu("CUDA_VISIBLE_DEVICES", "");
  ScopedEnv work("BERTC_NCCL_ONE_RANK_WORK", "1");
  const auto one = distributed::single_process();
  try {
    cuda::NcclSums sums(*one, 30);
    FAIL() << "NCCL joined without a GPU";
  } catch (const distributed::RankError& e) {
    EXPECT_TRUE(contains(e.what(), "ncclCommInitRank failed")) << e.what();
  }
  // Two ranks, as far as the refusal looks (nothing is exchanged before it).
  struct TwoRanks : distributed::Communicator {
    int rank() const override { return 0; }
    int size() const override { return 2; }
    int local_rank() const override { return 0; }
    std::string describe() const override { return "two ranks (a stand-in)"; }
    std::string engine() const override { return "none"; }
    void set_timeout(double) override {}
    std::unique_ptr<distributed::PendingSum> start_sum(void*, size_t, distributed::Element) override { throw std::logic_error("sum"); }
    std::vector<uint64_t> all_gather(uint64_t, const std::string&) override { throw std::logic_error("gather"); }
    void broadcast(void*, size_t, int, const std::string&) override { throw std::logic_error("broadcast before the refusal"); }
    void reduce_scatter(float*, const std::vector<size_t>&, const std::string&) override { throw std::logic_error("sums before the refusal"); }
    void all_gather_shares(float*, const std::vector<size_t>&, const std::string&) override { throw std::logic_error("gather before the refusal"); }
    void all_to_all(const void*, void*, size_t, const std::string&) override { throw std::logic_error("all_to_all"); }
    void all_gather_bytes(const void*, void*, size_t, const std::string&) override { throw std::logic_error("gather"); }
    void meet(const std::string&) override { throw std::logic_error("meet"); }
    [[noreturn]] void abort(int) override { std::abort(); }
  } two;
  try {
    cuda::NcclSums sums(two, 30);
    FAIL() << "ncclAvg taken for a sum over two ranks";
  } catch (const distributed::RankError& e) {
    EXPECT_TRUE(contains(e.what(), "BERTC_NCCL_ONE_RANK_WORK=1 is for checks on one rank")) << e.what();
    EXPECT_TRUE(contains(e.what(), "this run has 2 ranks: unset it")) << e.what();
  }
}

TEST(Nccl, NoLibraryIsRefusedWithWhereItLooked) {
  ScopedEnv env("BERTC_NCCL", "/nonexistent/libnccl.so.2");
  const auto one = distributed::single_process();
  try {
    cuda::NcclSums sums(*one, 30);
    FAIL() << "NCCL joined without a library";
  } catch (const distributed::RankError& e) {
    EXPECT_TRUE(contains(e.what(), "none was found (tried /nonexistent/libnccl.so.2")) << e.what();
    EXPECT_TRUE(contains(e.what(), "scripts/setup.sh")) << e.what();
  }
}

}  // namespace
}  // namespace bertc
