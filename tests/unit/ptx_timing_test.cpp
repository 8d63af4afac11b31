// ptx/timing.h and the latency part of ptx/projection.h on kernels whose critical paths are known
// by hand: a chain of dependent adds against independent ones, a load and its use, a barrier
// holding a warp for another, cp.async's data waited for, and a grid's waves over a GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ptx/executor.h"
#include "ptx/projection.h"

namespace bertc::ptx {
namespace {

// Round latencies, each a different figure so that a kind timed as another shows.
constexpr Latencies kLatencies{4, 20, 30, 400, 32, 10};

// A kernel of `body` (after its registers' declarations and the parameter's load into %rd1).
std::string kernel(const std::string& body) {
  return R"(
.version 8.8
.target sm_80
.address_size 64

.visible .entry k(
	.param .u64 k_param_0
)
{
	.reg .pred 	%p<4>;
	.reg .f32 	%f<16>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<8>;
	.shared .align 16 .b8 stage[256];

	ld.param.u64 	%rd1, [k_param_0];
)" + body + R"(
	ret;
}
)";
}

// The cycles of one block of `threads` running `body`, its parameter a buffer of 256 floats.
uint64_t block_cycles(const std::string& body, uint32_t threads = 32) {
  Emulator emulator(parse_module(kernel(body), "timing.ptx"));
  std::vector<float> buffer(256, 1.0f);
  emulator.add_global(buffer.data(), buffer.size() * sizeof(float));
  LaunchConfig config{{1, 1, 1}, {threads, 1, 1}};
  config.latencies = kLatencies;
  return emulator.launch("k", emulator.pack_params("k", {reinterpret_cast<uint64_t>(buffer.data())}), config)
      .block_cycles;
}

// The parameter's load (ld.param: an ALU latency, 4) starts every kernel; %rd1 ready at 4.
constexpr uint64_t kParam = 4;

TEST(PtxTiming, DependentInstructionsWaitForTheirSourcesAndIndependentOnesIssueEachCycle) {
  const std::string start = "\tmov.f32 \t%f1, 0f3F800000;\n";
  std::string chain = start, independent = start;
  for (int i = 0; i < 8; ++i) {
    chain += "\tadd.f32 \t%f1, %f1, %f1;\n";                                 // each waits for the last: 4 cycles
    independent += "\tadd.f32 \t%f" + std::to_string(i + 2) + ", %f1, %f1;\n";  // each reads %f1 alone
  }
  // (ld.param at 0; mov at 1, ready at 5; eight adds 4 apart: the last at 33, ready at 37)
  EXPECT_EQ(block_cycles(chain), 37u);
  // (the adds issue at 5 to 12, one a cycle; the last ready at 16)
  EXPECT_EQ(block_cycles(independent), 16u);
}

TEST(PtxTiming, AGlobalLoadsUseWaitsForMemoryAndASharedOnesForTheSharedPipe) {
  // ld.global at 4 (its address ready), ready at 404; the add at 404, ready at 408.
  EXPECT_EQ(block_cycles("\tld.global.f32 \t%f1, [%rd1];\n\tadd.f32 \t%f2, %f1, %f1;\n"), kParam + 400 + 4);
  // (mov at 1, ready at 5; st at 5; ld at 6, ready at 36; the add at 36, ready at 40; one thread:
  // a warp's lanes storing to one word would race)
  EXPECT_EQ(block_cycles("\tmov.u32 \t%r1, stage;\n\tst.shared.f32 \t[%r1], %f1;\n\tld.shared.f32 \t%f2, [%r1];\n"
                         "\tadd.f32 \t%f3, %f2, %f2;\n",
                         1),
            6u + 30 + 4);
  // A special function's latency, not an ALU op's: ex2 at 1, ready at 21; the add ready at 25.
  EXPECT_EQ(block_cycles("\tex2.approx.f32 \t%f2, %f1;\n\tadd.f32 \t%f3, %f2, %f2;\n"), 1u + 20 + 4);
}

// Within a basic block the instructions are placed as ptxas's scheduler may place them: a second
// load issues while the first's use waits, not after it (the PTX's order is not the machine
// code's); past a branch, what follows waits for the block before it.
TEST(PtxTiming, ABasicBlocksInstructionsIssueAsTheirSourcesAllowNotInTheirOrder) {
  const std::string loads = "\tld.global.f32 \t%f1, [%rd1];\n\tadd.f32 \t%f2, %f1, %f1;\n"
                            "\tld.global.f32 \t%f3, [%rd1+4];\n\tadd.f32 \t%f4, %f3, %f3;\n";
  // (ld at 4, ready 404; the second ld at 5, ready 405; the adds at 404 and 405, the last ready 409)
  EXPECT_EQ(block_cycles(loads), 409u);
  // A branch between them (taken by no lane, on a comparison of the first add's result): the
  // add at 404, the setp at 408, the branch at 412; the second load at 413, ready 813; its add
  // ready 817.
  const std::string split = "\tld.global.f32 \t%f1, [%rd1];\n\tadd.f32 \t%f2, %f1, %f1;\n"
                            "\tsetp.eq.f32 \t%p1, %f2, 0f00000000;\n\t@%p1 bra \t$L__next;\n$L__next:\n"
                            "\tld.global.f32 \t%f3, [%rd1+4];\n\tadd.f32 \t%f4, %f3, %f3;\n";
  EXPECT_EQ(block_cycles(split), 413u + 400 + 4);
}

TEST(PtxTiming, ABarrierReleasesItsWarpsAfterTheLastArrives) {
  // Warp 0 loads from global memory and uses it before the barrier; warp 1 waits at the barrier
  // for it, and its add after the barrier issues only then.
  const std::string body = R"(
	mov.u32 	%r1, %tid.x;
	setp.ge.u32 	%p1, %r1, 32;
	@%p1 bra 	$L__skip;
	ld.global.f32 	%f1, [%rd1];
	add.f32 	%f2, %f1, %f1;
$L__skip:
	bar.sync 	0;
	add.f32 	%f3, %f1, %f1;
)";
  // warp 0: mov at 1 (ready 5), setp 5 (ready 9), bra 9, ld 10 (ready 410), add 410, bar 411;
  // released at 412 + 10 = 422 with warp 1 (which arrived at 10); the add after it at 422, ready
  // at 426.
  EXPECT_EQ(block_cycles(body, 64), 426u);
}

TEST(PtxTiming, AsyncCopiesDataIsWaitedForAtTheWaitThatCoversIt) {
  const std::string copy = R"(
	mov.u32 	%r1, stage;
	cp.async.ca.shared.global 	[%r1], [%rd1], 16;
	cp.async.commit_group;
)";
  // (one thread: lanes copying to one word would race.) mov at 1 (ready 5); cp.async at 5, its
  // data at 405; commit at 6; wait_group 0 at 405; ld.shared at 406, ready at 436.
  EXPECT_EQ(block_cycles(copy + "\tcp.async.wait_group 0;\n\tld.shared.f32 \t%f1, [%r1];\n", 1), 406u + 30);
  // wait_group 1 with one group committed waits for none of it: after the copy (at 5) and the
  // commit (placed at 2, a free cycle), at 6; the add at 7, ready at 11.
  EXPECT_EQ(block_cycles(copy + "\tcp.async.wait_group 1;\n\tadd.f32 \t%f2, %f1, %f1;\n", 1), 7u + 4);
  // wait_all waits for a copy not committed too: at 405, the add at 406, ready at 410.
  EXPECT_EQ(block_cycles("\tmov.u32 \t%r1, stage;\n\tcp.async.ca.shared.global \t[%r1], [%rd1], 16;\n"
                         "\tcp.async.wait_all;\n\tadd.f32 \t%f2, %f1, %f1;\n",
                         1),
            406u + 4);
}

TEST(PtxTiming, AnUntimedLaunchCountsNoCycles) {
  Emulator emulator(parse_module(kernel("\tadd.f32 \t%f1, %f1, %f1;\n"), "timing.ptx"));
  std::vector<float> buffer(4);
  emulator.add_global(buffer.data(), 16);
  const LaunchCounts c =
      emulator.launch("k", emulator.pack_params("k", {reinterpret_cast<uint64_t>(buffer.data())}), {{1, 1, 1}, {32, 1, 1}});
  EXPECT_EQ(c.block_cycles, 0u);
}

// A grid's blocks in waves: a GPU of 10 multiprocessors at 1 GHz, each holding 2 blocks of 1024
// threads (64 warps): 45 blocks of 1000 cycles take 3 waves, 3 us, past every throughput part;
// smaller blocks, more at once, fewer waves.
TEST(PtxProjection, TheCriticalPathsInWavesBoundAGridOfFewLongBlocks) {
  const GpuRates gpu{"round", 10, 1.0, 4, 1.0, 8.0, 100.0, 0, 64, 32, 64 << 10, 96 << 10};
  LaunchCounts c;
  c.blocks = 45, c.block_threads = 512, c.block_cycles = 45 * 1000;
  c.thread_instructions = 45 * 512 * 10;  // (10 instructions a thread: 0.18 us of issue)
  Projection p = project(c, gpu);
  EXPECT_DOUBLE_EQ(p.latency_seconds, 2e-6);  // (4 blocks of 512 threads a multiprocessor: 40 a wave, so 2 waves)
  EXPECT_EQ(p.bound, Bound::Latency);
  EXPECT_DOUBLE_EQ(p.seconds, 2e-6);
  c.block_threads = 1024;  // (2 a multiprocessor: 20 a wave, 3 waves)
  p = project(c, gpu);
  EXPECT_DOUBLE_EQ(p.latency_seconds, 3e-6);
  // Registers that let one block a multiprocessor: 5 waves.
  p = project(c, gpu, 64);
  EXPECT_DOUBLE_EQ(p.latency_seconds, 5e-6);
  // Counts of an untimed launch: no latency part.
  c.block_cycles = 0;
  EXPECT_EQ(project(c, gpu).latency_seconds, 0.0);
}

}  // namespace
}  // namespace bertc::ptx
