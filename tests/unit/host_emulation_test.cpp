// The prelude's host side and the fiber scheduler: barriers, shuffles and shared memory behave as
// on a GPU; a kernel that misses a barrier or lets threads diverge at one is caught; 16-bit storage
// and dropout are bit-exact with the reference executor.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "codegen/host_compile.h"
#include "prelude_kernels.h"
#include "ir/builder.h"
#include "ir/philox.h"
#include "reference/executor.h"

namespace bertc::codegen {
namespace {

class HostEmulation : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    emulator = new HostEmulator;
    library = new HostKernelLibrary(compile_for_host(testing::kPreludeKernels, BERTC_TEST_CACHE, emulator->api()));
  }
  static void TearDownTestSuite() {
    delete library;
    delete emulator;
  }
  void launch(const char* kernel, std::vector<void*> args, int grid, int block, bool cooperative = true,
              ThreadOrder order = ThreadOrder::Forward, std::uint64_t block_order_seed = 0) {
    emulator->launch(kernel, library->entry(kernel), args.data(), {{grid}, {block}, cooperative, order, block_order_seed});
  }
  static HostEmulator* emulator;
  static HostKernelLibrary* library;
};
HostEmulator* HostEmulation::emulator = nullptr;
HostKernelLibrary* HostEmulation::library = nullptr;

// Seed 0 runs blocks in grid order; a seed shuffles them, each launch anew, every block once; and a
// sum that float atomics make depend on the order (1e8 absorbs a 1 added after it, not 1s added
// before it) comes out differently, which is what makes order dependence show in CI.
TEST_F(HostEmulation, ShuffledBlockOrdersExposeOrderDependentSums) {
  constexpr int kBlocks = 64;
  std::vector<float> in(kBlocks, 1.0f);
  in[0] = 1e8f, in[1] = -1e8f;
  auto run = [&](std::uint64_t seed) {
    float sum = 0;
    unsigned int count = 0;
    std::vector<int> order(kBlocks, -1);
    launch("atomic_total", {in.data(), &sum, &count, order.data()}, kBlocks, 1, false, ThreadOrder::Forward, seed);
    return std::pair{sum, order};
  };
  const auto [in_grid_order, grid_order] = run(0);
  for (int b = 0; b < kBlocks; ++b) EXPECT_EQ(grid_order[b], b);
  EXPECT_EQ(in_grid_order, 62.0f);  // 1e8 - 1e8, then the 62 ones
  std::set<float> sums;
  std::set<std::vector<int>> orders;
  for (std::uint64_t seed : {1, 1, 2, 3, 4, 5}) {
    const auto [sum, order] = run(seed);
    std::vector<int> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (int b = 0; b < kBlocks; ++b) ASSERT_EQ(sorted[b], b) << "seed " << seed << ": not every block ran once";
    sums.insert(sum);
    orders.insert(order);
  }
  EXPECT_EQ(orders.size(), 6u);  // seed 1 twice: two launches, two orders
  EXPECT_GE(sums.size(), 2u);
}

TEST_F(HostEmulation, BlockReductionsThroughShufflesAndSharedMemory) {
  for (int threads : {32, 96, 256, 1024})
    for (ThreadOrder order : {ThreadOrder::Forward, ThreadOrder::Reverse}) {
      std::vector<float> out(3, -1);
      launch("block_sums", {out.data()}, 3, threads, true, order);
      for (int b = 0; b < 3; ++b)  // sum of tid over the block plus 1000 * b per thread
        EXPECT_EQ(out[b], threads * (threads - 1) / 2.0f + 1000.0f * b * threads) << threads << " threads";
    }
  std::vector<float> in(2 * 64), out(2);
  for (size_t i = 0; i < in.size(); ++i) in[i] = std::sin(static_cast<float>(i));
  launch("block_maxes", {in.data(), out.data()}, 2, 64);
  for (int b = 0; b < 2; ++b) EXPECT_EQ(out[b], *std::max_element(in.begin() + 64 * b, in.begin() + 64 * (b + 1)));
}

TEST_F(HostEmulation, AMissingBarrierShowsInEitherThreadOrder) {
  std::vector<float> in(2 * 128), out(in.size());
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  for (ThreadOrder order : {ThreadOrder::Forward, ThreadOrder::Reverse}) {
    int barrier = 1;
    launch("reverse", {in.data(), out.data(), &barrier}, 2, 128, true, order);
    for (int b = 0; b < 2; ++b)
      for (int t = 0; t < 128; ++t) ASSERT_EQ(out[128 * b + t], in[128 * b + 127 - t]);
    // Without the barrier a thread reads slots not yet written: the poison (NaN) comes through,
    // in forward order for the first half of the threads, in reverse order for the second.
    barrier = 0;
    launch("reverse", {in.data(), out.data(), &barrier}, 2, 128, true, order);
    int wrong = 0;
    for (size_t i = 0; i < out.size(); ++i) wrong += std::isnan(out[i]);
    EXPECT_GE(wrong, 2 * 63) << (order == ThreadOrder::Forward ? "forward" : "reverse");
  }
}

TEST_F(HostEmulation, DivergentBarrierAndUndeclaredBarrierAreErrors) {
  std::vector<float> out(64);
  try {
    launch("divergent", {out.data()}, 1, 64);
    FAIL() << "no error";
  } catch (const EmulationError& e) {
    EXPECT_NE(std::string(e.what()).find("waits at a barrier that not all of its threads reach"), std::string::npos) << e.what();
  }
  std::vector<float> sums(1);
  EXPECT_THROW(launch("block_sums", {sums.data()}, 1, 64, /*cooperative=*/false), EmulationError);
}

// The reference executor's rounding, through a cast op: what the IR's f16/bf16 values hold.
std::vector<float> reference_round(const std::vector<float>& x, ir::DType dtype) {
  ir::Builder b("r");
  b.output(b.cast(b.input("x", ir::DType::F32, {static_cast<int64_t>(x.size())}), dtype), "y");
  const ir::Graph g = std::move(b).finish();
  ir::Environment<float> env;
  env["x"] = ir::HostTensor<float>::zeros({ir::DType::F32, {static_cast<int64_t>(x.size())}});
  env["x"].real = x;
  return reference::Executor<float>(g).run(env).outputs.at(0).real;
}

TEST_F(HostEmulation, SixteenBitStorageIsBitExactWithTheReference) {
  std::vector<float> x;
  for (float v : {0.0f, -0.0f, 1.0f, 65504.0f, 65519.9f, 65520.0f, 1e6f, 5.9604645e-08f, 2.9802322e-08f,
                  2.9802326e-08f, 6.1035156e-05f, 6.097555e-05f, 1.00048828125f, 1.00146484375f, 3.140625f})
    x.push_back(v), x.push_back(-v);
  for (int i = 0; x.size() < 1024; ++i) x.push_back(std::ldexp(std::sin(i * 0.37f), (i % 40) - 25));
  std::vector<float> f16(x.size()), bf16(x.size());
  launch("round_both", {x.data(), f16.data(), bf16.data()}, 4, 256, false);
  const auto want16 = reference_round(x, ir::DType::F16), want_bf16 = reference_round(x, ir::DType::BF16);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(std::memcmp(&f16[i], &want16[i], 4), 0) << "f16 of " << x[i] << ": " << f16[i] << " vs " << want16[i];
    EXPECT_EQ(std::memcmp(&bf16[i], &want_bf16[i], 4), 0) << "bf16 of " << x[i];
  }
}

TEST_F(HostEmulation, DropoutMaskIsTheReferenceMask) {
  long long seed = 0x123456789abcLL;
  std::vector<float> keep(4096);
  launch("keep_mask", {&seed, keep.data()}, 16, 256, false);
  const uint32_t threshold = ir::dropout_threshold(0.1);
  ASSERT_EQ(threshold, 1677722u);
  for (size_t i = 0; i < keep.size(); ++i) ASSERT_EQ(keep[i] == 1.0f, ir::dropout_keep(seed, 7, i, threshold)) << i;
}

TEST_F(HostEmulation, SixteenBitAtomicAddsTouchOnlyTheirHalfWord) {
  uint16_t h[4] = {}, b[4] = {};
  launch("add_16", {h, b}, 1, 64, false);  // 16 adds of 0.5 into each of 4 adjacent slots: 8.0
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(h[i], 0x4800) << i;  // 8.0 in IEEE half
    EXPECT_EQ(b[i], 0x4100) << i;  // 8.0 in bfloat16
  }
}

}  // namespace
}  // namespace bertc::codegen
