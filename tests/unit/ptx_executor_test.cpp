// ptx/: the executor and the instruction semantics on PTX written here, against facts of the PTX
// ISA document and IEEE 754 (not against codegen's prelude), and the memory and synchronisation
// checks each on a planted bug: a read past a buffer, a misaligned access, a barrier in divergent
// code, a shuffle reading a lane outside its mask.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <vector>

#include "ptx/counts_words.h"
#include "ptx/executor.h"
#include "ptx/global_races.h"
#include "ptx/projection.h"
#include "ptx/semantics.h"
#include "ptx/shared_checks.h"
#include "refusal.h"

namespace bertc::ptx {
namespace {

uint64_t f(float x) { return std::bit_cast<uint32_t>(x); }
uint64_t run(const char* opcode, std::vector<uint64_t> sources) { return compute(decode_opcode(opcode), sources).value; }

TEST(PtxSemantics, HalfPrecisionConversionsRoundAsIeeeSays) {
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bffu);            // the largest half
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7bffu);            // below the midpoint to 65536: stays
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00u);            // the midpoint, ties to even: infinity
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001u);  // the least subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000u);  // half of it: ties to even, zero
  EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -25)), 0x0001u);  // above half: up
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00u);  // a tie at 1: to even (1.0)
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02u);  // a tie at 1+2^-10: to even (up)
  EXPECT_EQ(f16_to_f32(0x3555), 0.333251953125f);
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(NAN))));
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80u);  // a tie: to even
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82u);
}

TEST(PtxSemantics, ArithmeticAndConversionsFollowTheIsa) {
  // cvt float to integer saturates, NaN to 0; .rzi truncates, .rni rounds to even.
  EXPECT_EQ(run("cvt.rzi.s32.f32", {f(3.9e9f)}), 0x7fffffffu);
  EXPECT_EQ(run("cvt.rzi.s32.f32", {f(-3.9e9f)}), 0x80000000u);
  EXPECT_EQ(run("cvt.rzi.s32.f32", {f(NAN)}), 0u);
  EXPECT_EQ(run("cvt.rzi.s32.f32", {f(-2.7f)}), static_cast<uint32_t>(-2));
  EXPECT_EQ(run("cvt.rni.f32.f32", {f(2.5f)}), f(2.0f));
  EXPECT_EQ(run("cvt.sat.f32.f32", {f(-0.5f)}), f(0.0f));
  EXPECT_EQ(run("cvt.s64.s32", {0xffffffffu}), ~uint64_t{0});  // sign-extended
  EXPECT_EQ(run("cvt.u64.u32", {0xffffffffu}), 0xffffffffu);
  // cvt.rna.tf32.f32: 10 mantissa bits, a tie away from zero.
  EXPECT_EQ(run("cvt.rna.tf32.f32", {f(1.0f + std::ldexp(1.0f, -11))}), f(1.0f + std::ldexp(1.0f, -10)));
  // Directed roundings: 1 + 2^-30 is not a float; rm keeps 1, rp takes the next float up.
  EXPECT_EQ(run("fma.rm.f32", {f(1.0f), f(1.0f), f(std::ldexp(1.0f, -30))}), f(1.0f));
  EXPECT_EQ(run("fma.rp.f32", {f(1.0f), f(1.0f), f(std::ldexp(1.0f, -30))}), f(std::nextafter(1.0f, 2.0f)));
  // ftz flushes a subnormal input to zero of its sign.
  EXPECT_EQ(run("add.ftz.f32", {f(std::ldexp(1.0f, -140)), f(0.0f)}), f(0.0f));
  EXPECT_EQ(run("add.f32", {f(std::ldexp(1.0f, -140)), f(0.0f)}), f(std::ldexp(1.0f, -140)));
  // min/max: a NaN operand gives the other.
  EXPECT_EQ(run("max.f32", {f(NAN), f(2.0f)}), f(2.0f));
  EXPECT_EQ(run("min.f32", {f(-0.0f), f(0.0f)}), f(-0.0f));
  // Integer: wide and high products, shifts past the width, signed shifts.
  EXPECT_EQ(run("mul.wide.s32", {0xffffffffu, 4}), static_cast<uint64_t>(-4));
  EXPECT_EQ(run("mul.hi.u32", {0x80000000u, 4}), 2u);
  EXPECT_EQ(run("mul.hi.s64", {static_cast<uint64_t>(-2), 3}), ~uint64_t{0});
  EXPECT_EQ(run("shl.b32", {1, 32}), 0u);
  EXPECT_EQ(run("shr.s32", {0x80000000u, 40}), 0xffffffffu);
  EXPECT_EQ(run("shr.u32", {0x80000000u, 31}), 1u);
  // bfe: the field, sign-extended from its top bit for .s32; bfi writes a field.
  EXPECT_EQ(run("bfe.u32", {0xf0u, 4, 4}), 0xfu);
  EXPECT_EQ(run("bfe.s32", {0xf0u, 4, 4}), 0xffffffffu);
  EXPECT_EQ(run("bfi.b32", {0x5u, 0xffff0000u, 4, 4}), 0xffff0050u);
  // prmt: byte selectors from {b, a}; bit 3 of a selector replicates the byte's sign.
  EXPECT_EQ(run("prmt.b32", {0x44332211u, 0x88776655u, 0x7654}), 0x88776655u);
  EXPECT_EQ(run("prmt.b32", {0x000000f0u, 0, 0x8888}), 0xffffffffu);
  // setp with unordered comparisons true on NaN, ordered false.
  EXPECT_EQ(run("setp.ltu.f32", {f(NAN), f(1.0f)}), 1u);
  EXPECT_EQ(run("setp.lt.f32", {f(NAN), f(1.0f)}), 0u);
  EXPECT_EQ(run("setp.ne.f32", {f(NAN), f(1.0f)}), 0u);
  EXPECT_EQ(run("setp.lt.u32", {0xffffffffu, 1}), 0u);
  EXPECT_EQ(run("setp.lt.s32", {0xffffffffu, 1}), 1u);
  EXPECT_THROW(run("div.u32", {1, 0}), std::domain_error);
}

// The forms a review found the decoder took and the semantics got wrong or refused (ISA: "abs",
// "neg", "min", "max", "slct", "mad", "cvt"): each against its definition.
TEST(PtxSemantics, SignsSelectsSaturationsAndNarrowConversionsFollowTheIsa) {
  const uint64_t d1 = std::bit_cast<uint64_t>(1.0), dm1 = std::bit_cast<uint64_t>(-1.0);
  EXPECT_EQ(run("neg.f64", {d1}), dm1);  // (the sign bit alone: integer negation gave -4.0)
  EXPECT_EQ(run("abs.f64", {dm1}), d1);
  EXPECT_EQ(run("neg.f16", {0x3c00}), 0xbc00u);            // 1.0 -> -1.0
  EXPECT_EQ(run("abs.bf16x2", {0xbf80bf80u}), 0x3f803f80u);  // (-1, -1) -> (1, 1)
  EXPECT_EQ(run("abs.ftz.f16", {0x8001}), 0x0000u);          // a subnormal: flushed, then its sign cleared
  // .NaN: a NaN operand gives the canonical NaN (without it, the other operand).
  EXPECT_EQ(run("max.NaN.f32", {f(NAN), f(2.0f)}), 0x7fffffffu);
  EXPECT_EQ(run("min.NaN.f32", {f(1.0f), f(NAN)}), 0x7fffffffu);
  // slct: a where c >= 0 (-0 is 0), else b; a NaN c is not >= 0.
  EXPECT_EQ(run("slct.u32.s32", {7, 9, 0}), 7u);
  EXPECT_EQ(run("slct.u32.s32", {7, 9, 0xffffffffu}), 9u);
  EXPECT_EQ(run("slct.u32.f32", {7, 9, f(-0.0f)}), 7u);
  EXPECT_EQ(run("slct.u32.f32", {7, 9, f(NAN)}), 9u);
  // mad.hi.sat.s32: the product's high word plus c, clamped: (2^30 x 2^30) >> 32 = 2^28.
  EXPECT_EQ(run("mad.hi.sat.s32", {1u << 30, 1u << 30, 0x7fffffffu}), 0x7fffffffu);
  EXPECT_EQ(run("mad.hi.sat.s32", {1u << 30, 1u << 30, 1}), (1u << 28) + 1);
  // cvt to 16 bits: .relu clamps a negative result to 0 and a NaN to the canonical NaN; what is
  // not modelled (an integral rounding, .sat, an f64 source rounding twice) is refused.
  EXPECT_EQ(run("cvt.rn.relu.f16.f32", {f(-1.0f)}), 0u);
  EXPECT_EQ(run("cvt.rn.relu.bf16.f32", {f(NAN)}), 0x7fffu);
  EXPECT_EQ(run("cvt.rn.relu.f16.f32", {f(2.0f)}), 0x4000u);
  EXPECT_ANY_THROW(run("cvt.rni.f16.f32", {f(2.5f)}));
  EXPECT_ANY_THROW(run("cvt.rn.f16.f64", {d1}));
}

// A kernel in NVRTC's forms: out[i] = in[i] * 2 for i < n, one element a thread; and a warp sum
// by butterfly shuffles, written by lane 0 of each warp.
constexpr const char* kKernels = R"(
.version 8.8
.target sm_61
.address_size 64

.visible .entry twice(
	.param .u64 twice_param_0,
	.param .u64 twice_param_1,
	.param .u32 twice_param_2
)
.maxntid 64, 1, 1
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<3>;
	.reg .b32 	%r<5>;
	.reg .b64 	%rd<8>;

	ld.param.u64 	%rd1, [twice_param_0];
	ld.param.u64 	%rd2, [twice_param_1];
	ld.param.u32 	%r1, [twice_param_2];
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %ntid.x;
	mov.u32 	%r4, %tid.x;
	mad.lo.s32 	%r2, %r2, %r3, %r4;
	setp.ge.s32 	%p1, %r2, %r1;
	@%p1 bra 	$L__BB0_2;
	cvta.to.global.u64 	%rd3, %rd1;
	mul.wide.s32 	%rd4, %r2, 4;
	add.s64 	%rd5, %rd3, %rd4;
	ld.global.f32 	%f1, [%rd5];
	add.f32 	%f2, %f1, %f1;
	cvta.to.global.u64 	%rd6, %rd2;
	add.s64 	%rd7, %rd6, %rd4;
	st.global.f32 	[%rd7], %f2;
$L__BB0_2:
	ret;

}

.visible .entry warp_sum(
	.param .u64 warp_sum_param_0,
	.param .u64 warp_sum_param_1,
	.param .u32 warp_sum_param_2
)
.maxntid 64, 1, 1
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<12>;
	.reg .b64 	%rd<8>;
	.shared .align 4 .b8 _ZZ8warp_sumE4part[8];

	ld.param.u64 	%rd1, [warp_sum_param_0];
	ld.param.u64 	%rd2, [warp_sum_param_1];
	ld.param.u32 	%r9, [warp_sum_param_2];
	mov.u32 	%r1, %tid.x;
	cvta.to.global.u64 	%rd3, %rd1;
	mul.wide.u32 	%rd4, %r1, 4;
	add.s64 	%rd5, %rd3, %rd4;
	ld.global.u32 	%r2, [%rd5];
	shfl.sync.bfly.b32	%r3|%p1, %r2, 16, 31, %r9;
	add.s32 	%r4, %r3, %r2;
	shfl.sync.bfly.b32	%r5|%p1, %r4, 8, 31, %r9;
	add.s32 	%r6, %r5, %r4;
	shfl.sync.bfly.b32	%r7|%p1, %r6, 4, 31, %r9;
	add.s32 	%r8, %r7, %r6;
	and.b32  	%r10, %r1, 31;
	setp.ne.s32 	%p2, %r10, 0;
	@%p2 bra 	$L__BB1_2;
	shr.u32 	%r11, %r1, 5;
	cvta.to.global.u64 	%rd6, %rd2;
	mul.wide.u32 	%rd7, %r11, 4;
	add.s64 	%rd6, %rd6, %rd7;
	st.global.u32 	[%rd6], %r8;
$L__BB1_2:
	bar.sync 	0;
	ret;

}
)";

struct Fixture {
  Emulator emulator{parse_module(kKernels, "test.ptx")};
  LaunchCounts launch(const char* kernel, const std::vector<uint64_t>& params, uint32_t blocks, uint32_t threads,
                      uint64_t seed = 0) {
    return emulator.launch(kernel, emulator.pack_params(kernel, params), {{blocks, 1, 1}, {threads, 1, 1}, 0, seed});
  }
};

std::string refusal(const std::function<void()>& f) { return testing::refusal<Error>(f); }

TEST(PtxExecutor, RunsAKernelOverAGrid) {
  Fixture fx;
  std::vector<float> in(100), out(100, -1);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i) * 0.5f;
  fx.emulator.add_global(in.data(), in.size() * 4);
  fx.emulator.add_global(out.data(), out.size() * 4);
  const LaunchCounts counts =
      fx.launch("twice", {reinterpret_cast<uint64_t>(in.data()), reinterpret_cast<uint64_t>(out.data()), 100}, 2, 64, 3);
  for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(out[i], 2 * in[i]) << i;
  // 100 threads run all 18 instructions (the branch not taken); the other 28 of the 2 x 64 branch
  // to ret: 10 each.
  EXPECT_EQ(counts.thread_instructions, 100u * 18 + 28u * 10);
  // Counted by class (counters.h): each of the 100 threads in range adds once (1 FLOP) and stores
  // once; every thread of the two blocks reads its three parameters.
  EXPECT_EQ(counts.flops, 100.0);
  EXPECT_EQ(counts.by_class[static_cast<size_t>(InstructionClass::FloatOther)], 100u);
  EXPECT_EQ(counts.by_class[static_cast<size_t>(InstructionClass::GlobalStore)], 100u);
  EXPECT_EQ(counts.by_class[static_cast<size_t>(InstructionClass::GlobalLoad)], 128u * 3 + 100u);
  EXPECT_EQ(counts.blocks, 2u);
  EXPECT_EQ(counts.warps, 4u);
  EXPECT_EQ(counts.mma_flops, 0.0);
}

// A sampled launch (LaunchConfig::sample_blocks) runs blocks spread over the grid, the first and
// last among them, and scales their counts to the grid: where every block does the same work, the
// counts of the whole launch exactly; the blocks not run write nothing.
TEST(PtxExecutor, ASampledLaunchRunsSpreadBlocksAndScalesTheirCounts) {
  Fixture fx;
  // (aligned alike, so that the two runs' requests touch sectors alike)
  alignas(128) std::array<float, 320> in, out, whole;
  in.fill(1.5f), out.fill(-1), whole.fill(-1);
  for (auto* v : {&in, &out, &whole}) fx.emulator.add_global(v->data(), v->size() * 4);
  auto params = [&](std::array<float, 320>& o) {
    return fx.emulator.pack_params("twice", {reinterpret_cast<uint64_t>(in.data()), reinterpret_cast<uint64_t>(o.data()), 320});
  };
  const LaunchCounts all = fx.emulator.launch("twice", params(whole), {{10, 1, 1}, {32, 1, 1}, 0, 0});
  LaunchConfig sampled{{10, 1, 1}, {32, 1, 1}, 0, 5};
  sampled.sample_blocks = 4;
  const LaunchCounts some = fx.emulator.launch("twice", params(out), sampled);
  // Blocks 0, 3, 6 and 9 (i x 9 / 3): theirs written, no other.
  for (size_t i = 0; i < out.size(); ++i) {
    const size_t block = i / 32;
    EXPECT_EQ(out[i], block % 3 == 0 ? 3.0f : -1.0f) << i;
  }
  EXPECT_EQ(all.executed_blocks, 10u);
  EXPECT_EQ(some.executed_blocks, 4u);
  EXPECT_EQ(some.blocks, 10u);
  EXPECT_EQ(some.warps, 10u);
  EXPECT_EQ(some.thread_instructions, all.thread_instructions);
  EXPECT_EQ(some.by_class, all.by_class);
  EXPECT_EQ(some.by_op, all.by_op);
  EXPECT_EQ(some.flops, all.flops);
  EXPECT_EQ(some.global_requests, all.global_requests);
  EXPECT_EQ(some.global_sectors, all.global_sectors);
  // A sample as large as the grid is the grid; one block cannot be the first and the last.
  sampled.sample_blocks = 10;
  EXPECT_EQ(fx.emulator.launch("twice", params(out), sampled).executed_blocks, 10u);
  sampled.sample_blocks = 1;
  EXPECT_NE(refusal([&] { fx.emulator.launch("twice", params(out), sampled); }).find("give 2 or more"), std::string::npos);
}

TEST(PtxExecutor, ShufflesSumAWarpsLanes) {
  Fixture fx;
  std::vector<uint32_t> in(64), out(2, 0);
  for (uint32_t i = 0; i < 64; ++i) in[i] = i;
  fx.emulator.add_global(in.data(), 256);
  fx.emulator.add_global(out.data(), 8);
  // Butterflies of 16, 8 and 4: lane 0 ends with the sum over lanes 0 ^ {0, 4, ..., 28}, that is
  // 0 + 4 + ... + 28 = 112; warp 1's lanes hold their index, 32 more each over 8 lanes.
  const LaunchCounts counts = fx.launch(
      "warp_sum", {reinterpret_cast<uint64_t>(in.data()), reinterpret_cast<uint64_t>(out.data()), 0xffffffff}, 1, 64, 5);
  EXPECT_EQ(out[0], 112u);
  EXPECT_EQ(out[1], 112u + 8 * 32);
  // Address work told from the rest (classes_of): every thread's mov of %tid.x, cvta, mul.wide and
  // add make the load's address (4), the two lanes that store also shr, cvta, mul.wide and add (4
  // more); the sums' adds, the lane test's and/setp/bra and ret are the other integer work (7).
  EXPECT_EQ(counts.by_class[static_cast<size_t>(InstructionClass::Address)], 64u * 4 + 2u * 4);
  EXPECT_EQ(counts.by_class[static_cast<size_t>(InstructionClass::Other)], 64u * 7);
}

// cp.async's data is visible only after the cp.async.wait_group that covers its group (ISA:
// "Asynchronous copy"): before it, the copy may have landed or not, so a read of its bytes then is
// a finding (the emulator lands it at the wait: such a read saw what shared memory held before,
// here the zeros the thread wrote first, without a word).
constexpr const char* kAsyncCopy = R"(
.version 8.8
.target sm_80
.address_size 64
.visible .entry async_copy(
	.param .u64 async_copy_param_0,
	.param .u64 async_copy_param_1
)
.maxntid 32, 1, 1
{
	.reg .b32 	%r<5>;
	.reg .b64 	%rd<5>;
	.shared .align 16 .b8 buf[16];
	ld.param.u64 	%rd1, [async_copy_param_0];
	ld.param.u64 	%rd2, [async_copy_param_1];
	cvta.to.global.u64 	%rd3, %rd1;
	cvta.to.global.u64 	%rd4, %rd2;
	mov.u32 	%r1, buf;
	mov.u32 	%r4, 0;
	st.shared.v4.u32 	[%r1], {%r4, %r4, %r4, %r4};
	cp.async.cg.shared.global [%r1], [%rd3], 16, 8;
	cp.async.commit_group;
	ld.shared.u32 	%r2, [%r1];
	cp.async.wait_group 0;
	ld.shared.u32 	%r3, [%r1];
	st.global.u32 	[%rd4], %r2;
	st.global.u32 	[%rd4+4], %r3;
	ld.shared.u32 	%r3, [%r1+8];
	st.global.u32 	[%rd4+8], %r3;
	ret;
}
)";

TEST(PtxExecutor, AnAsyncCopyIsSeenOnlyAfterItsWait) {
  alignas(16) uint32_t in[4] = {7, 8, 9, 10};
  uint32_t out[3] = {99, 99, 99};
  const auto run = [&](const std::string& ptx) {
    Emulator emulator(parse_module(ptx, "async.ptx"));
    emulator.add_global(in, sizeof in);
    emulator.add_global(out, sizeof out);
    emulator.launch("async_copy",
                    emulator.pack_params("async_copy", {reinterpret_cast<uint64_t>(in), reinterpret_cast<uint64_t>(out)}),
                    {{1, 1, 1}, {1, 1, 1}, 0, 0});
  };
  const std::string early = refusal([&] { run(kAsyncCopy); });
  EXPECT_NE(early.find("async.ptx:23: kernel async_copy, block (0,0,0), thread (0,0,0): ld.shared.u32: reads shared "
                       "memory at offset 0, which an async copy of thread 0 (line 21) is still writing"),
            std::string::npos)
      << early;
  // The read taken out: after the wait, the copy; past src-size (8 of the 16 bytes) zero-filled.
  std::string waited = kAsyncCopy;
  const std::string read_early = "\tld.shared.u32 \t%r2, [%r1];\n";
  waited.replace(waited.find(read_early), read_early.size(), "\tmov.u32 \t%r2, 0;\n");
  run(waited);
  EXPECT_EQ(out[1], 7u);
  EXPECT_EQ(out[2], 0u);  // (not the source's 9)
}

// A stage of shared memory filled twice (double buffering's pattern, in one thread) and read by
// another thread after a barrier: right, each read after the wait of the copy it reads; a read of
// the stage between its second copy and that copy's wait, and a second copy never waited for
// before the barrier, are findings naming the copy (the emulator, landing a copy at its wait,
// gave the first copy's data in both, without a word).
constexpr const char* kStages = R"(
.version 8.8
.target sm_80
.address_size 64
.visible .entry stages(
	.param .u64 stages_param_0,
	.param .u64 stages_param_1
)
.maxntid 32, 1, 1
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<8>;
	.shared .align 16 .b8 buf[16];
	ld.param.u64 	%rd1, [stages_param_0];
	ld.param.u64 	%rd2, [stages_param_1];
	cvta.to.global.u64 	%rd3, %rd1;
	cvta.to.global.u64 	%rd4, %rd2;
	mov.u32 	%r1, buf;
	mov.u32 	%r5, %tid.x;
	mul.wide.u32 	%rd5, %r5, 4;
	add.s64 	%rd6, %rd4, %rd5;
	setp.ne.u32 	%p1, %r5, 0;
	@%p1 bra 	$L_reader;
	cp.async.cg.shared.global [%r1], [%rd3], 16;
	cp.async.commit_group;
	cp.async.wait_group 0;
	ld.shared.u32 	%r2, [%r1];
	st.global.u32 	[%rd4+8], %r2;
	cp.async.cg.shared.global [%r1], [%rd3+16], 16;
	cp.async.commit_group;
	cp.async.wait_group 0;
$L_reader:
	bar.sync 	0;
	ld.shared.u32 	%r3, [%r1];
	st.global.u32 	[%rd6], %r3;
	ret;
}
)";

TEST(PtxExecutor, AStageReadBeforeTheWaitOfItsNextCopyIsAFinding) {
  alignas(16) uint32_t in[8] = {7, 8, 9, 10, 11, 12, 13, 14};
  uint32_t out[3] = {99, 99, 99};
  const auto run = [&](const std::string& ptx) {
    Emulator emulator(parse_module(ptx, "stages.ptx"));
    emulator.add_global(in, sizeof in);
    emulator.add_global(out, sizeof out);
    emulator.launch("stages", emulator.pack_params("stages", {reinterpret_cast<uint64_t>(in), reinterpret_cast<uint64_t>(out)}),
                    {{1, 1, 1}, {2, 1, 1}, 0, 0});
  };
  run(kStages);
  EXPECT_EQ(out[2], 7u);  // (thread 0, between the copies: the first)
  EXPECT_EQ(out[0], 11u);  // (both threads after the barrier: the second)
  EXPECT_EQ(out[1], 11u);
  const std::string second_wait = "\tcp.async.commit_group;\n\tcp.async.wait_group 0;\n$L_reader:";
  std::string early = kStages;  // (the stage read between its second copy and that copy's wait)
  early.replace(early.find(second_wait), second_wait.size(),
                "\tcp.async.commit_group;\n\tld.shared.u32 \t%r4, [%r1];\n\tcp.async.wait_group 0;\n$L_reader:");
  const std::string why = refusal([&] { run(early); });
  EXPECT_NE(why.find("thread (0,0,0): ld.shared.u32: reads shared memory at offset 0, which an async copy of thread 0 "
                     "(line 30) is still writing"),
            std::string::npos)
      << why;
  std::string never = kStages;  // (the second copy never waited for: the other thread reads it after the barrier)
  never.replace(never.find(second_wait), second_wait.size(), "\tcp.async.commit_group;\n$L_reader:");
  const std::string read_after = "\tbar.sync \t0;\n\tld.shared.u32";
  never.replace(never.find(read_after), read_after.size(), "\tbar.sync \t0;\n\t@%p1 ld.shared.u32");  // (thread 1's alone)
  const std::string unwaited = refusal([&] { run(never); });
  EXPECT_NE(unwaited.find("thread (1,0,0): ld.shared.u32: reads shared memory at offset 0, which an async copy of "
                          "thread 0 (line 30) is still writing"),
            std::string::npos)
      << unwaited;
}

// A stage filled again while other threads may still read it: thread 0 issues the second copy
// into the stage the block has just read, with no barrier after those reads (its wait comes after
// one): the copy may land before thread 1's read, a finding at the cp.async (its write was seen
// only at the wait, after the barrier, and the race went unseen); with the barrier, it runs.
constexpr const char* kRefill = R"(
.version 8.8
.target sm_80
.address_size 64
.visible .entry refill(
	.param .u64 refill_param_0,
	.param .u64 refill_param_1
)
.maxntid 32, 1, 1
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<8>;
	.shared .align 16 .b8 buf[16];
	ld.param.u64 	%rd1, [refill_param_0];
	ld.param.u64 	%rd2, [refill_param_1];
	cvta.to.global.u64 	%rd3, %rd1;
	cvta.to.global.u64 	%rd4, %rd2;
	mov.u32 	%r1, buf;
	mov.u32 	%r5, %tid.x;
	mul.wide.u32 	%rd5, %r5, 4;
	add.s64 	%rd6, %rd4, %rd5;
	setp.ne.u32 	%p1, %r5, 0;
	@%p1 bra 	$L_first;
	cp.async.cg.shared.global [%r1], [%rd3], 16;
	cp.async.commit_group;
	cp.async.wait_group 0;
$L_first:
	bar.sync 	0;
	ld.shared.u32 	%r2, [%r1];
	@%p1 bra 	$L_issued;
	cp.async.cg.shared.global [%r1], [%rd3+16], 16;
	cp.async.commit_group;
$L_issued:
	bar.sync 	0;
	@%p1 bra 	$L_waited;
	cp.async.wait_group 0;
$L_waited:
	bar.sync 	0;
	ld.shared.u32 	%r3, [%r1];
	add.u32 	%r4, %r2, %r3;
	st.global.u32 	[%rd6], %r4;
	ret;
}
)";

TEST(PtxExecutor, AStageFilledAgainBeforeItsLastReaderIsAFinding) {
  alignas(16) uint32_t in[8] = {7, 8, 9, 10, 11, 12, 13, 14};
  uint32_t out[2] = {99, 99};
  const auto run = [&](const std::string& ptx) {
    Emulator emulator(parse_module(ptx, "refill.ptx"));
    emulator.add_global(in, sizeof in);
    emulator.add_global(out, sizeof out);
    emulator.launch("refill", emulator.pack_params("refill", {reinterpret_cast<uint64_t>(in), reinterpret_cast<uint64_t>(out)}),
                    {{1, 1, 1}, {2, 1, 1}, 0, 0});
  };
  const std::string why = refusal([&] { run(kRefill); });
  EXPECT_NE(why.find("thread (0,0,0): cp.async.cg.shared.global: racecheck: writes shared memory at offset 0, which "
                     "thread (1,0,0) read"),
            std::string::npos)
      << why;
  std::string fenced = kRefill;  // (the reads ordered before the refill)
  const std::string issue = "\t@%p1 bra \t$L_issued;";
  fenced.replace(fenced.find(issue), issue.size(), "\tbar.sync \t0;\n" + issue);
  run(fenced);
  EXPECT_EQ(out[0], 7u + 11u);  // (the first tile, then the second)
  EXPECT_EQ(out[1], 7u + 11u);
}

// The schedule (ISA, "Independent Thread Scheduling": sm_70's warps and a warp's parted lanes run
// in any order between the points where threads meet), seen through atomic tickets: each thread
// takes 40, odd and even lanes on two sides of a branch. Without a seed, warp by warp and the
// lowest group first, the groups meeting where their paths join (even lanes' tickets before odd
// lanes' in each turn of the loop); under
// seeds, warps interleave (a warp's tickets among another's) and a warp's odd lanes may go first.
constexpr const char* kTickets = R"(
.version 8.8
.target sm_80
.address_size 64
.visible .entry tickets(
	.param .u64 tickets_param_0,
	.param .u64 tickets_param_1
)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<8>;
	ld.param.u64 	%rd1, [tickets_param_0];
	ld.param.u64 	%rd2, [tickets_param_1];
	cvta.to.global.u64 	%rd3, %rd1;
	cvta.to.global.u64 	%rd4, %rd2;
	mov.u32 	%r1, %tid.x;
	and.b32 	%r2, %r1, 1;
	setp.eq.u32 	%p1, %r2, 1;
	mov.u32 	%r5, 0;
	mul.wide.u32 	%rd5, %r1, 8;
	add.s64 	%rd6, %rd4, %rd5;
$L_loop:
	@%p1 bra 	$L_odd;
	atom.global.add.u32 	%r3, [%rd3], 1;
	bra 	$L_next;
$L_odd:
	atom.global.add.u32 	%r3, [%rd3], 1;
$L_next:
	setp.ne.u32 	%p2, %r5, 0;
	@%p2 bra 	$L_later;
	st.global.u32 	[%rd6], %r3;
$L_later:
	st.global.u32 	[%rd6+4], %r3;
	add.u32 	%r5, %r5, 1;
	setp.lt.u32 	%p2, %r5, 40;
	@%p2 bra 	$L_loop;
	ret;
}
)";

TEST(PtxExecutor, ASeedInterleavesWarpsAndAWarpsPartedLanes) {
  Emulator emulator(parse_module(kTickets, "tickets.ptx"));
  uint32_t counter = 0;
  std::vector<uint32_t> out(2 * 64);  // (each thread's first and last ticket)
  emulator.add_global(&counter, sizeof counter);
  emulator.add_global(out.data(), out.size() * 4);
  const auto run = [&](uint64_t seed) {
    counter = 0;
    emulator.launch("tickets",
                    emulator.pack_params("tickets", {reinterpret_cast<uint64_t>(&counter), reinterpret_cast<uint64_t>(out.data())}),
                    {{1, 1, 1}, {64, 1, 1}, 0, seed});
    EXPECT_EQ(counter, 64u * 40);
  };
  auto first = [&](size_t t) { return out[2 * t]; };
  auto last = [&](size_t t) { return out[2 * t + 1]; };
  run(0);
  // (warp 0's even lanes: the lowest group, then its odd lanes, meeting again where their paths
  // join, each turn of the loop: a warp's 32 tickets a turn, as a GPU reconverges its lanes; a
  // group that ran on to its loop's end took 40 turns' tickets first)
  EXPECT_EQ(first(0), 0u);
  EXPECT_EQ(first(1), 16u);
  EXPECT_EQ(last(0), 39u * 32);
  EXPECT_EQ(last(1), 39u * 32 + 16);
  EXPECT_EQ(first(32), 40u * 32);  // (warp 1 after the whole of warp 0)
  bool interleaved = false, odd_first = false;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    run(seed);
    uint32_t warp0_last = 0, warp1_first = UINT32_MAX, warp0_last_of_1 = 0, warp1_first_of_0 = UINT32_MAX;
    for (size_t t = 0; t < 32; ++t) warp0_last = std::max(warp0_last, last(t)), warp1_first = std::min(warp1_first, first(32 + t));
    for (size_t t = 32; t < 64; ++t) warp0_last_of_1 = std::max(warp0_last_of_1, last(t));
    for (size_t t = 0; t < 32; ++t) warp1_first_of_0 = std::min(warp1_first_of_0, first(t));
    // (a warp's tickets among the other's, whichever ran first)
    interleaved |= (warp1_first < warp0_last && warp1_first > warp1_first_of_0) ||
                   (warp1_first_of_0 < warp0_last_of_1 && warp1_first_of_0 > warp1_first);
    odd_first |= first(1) < first(0);
  }
  EXPECT_TRUE(interleaved);
  EXPECT_TRUE(odd_first);
}

// %smid, %nsmid and %nwarpid (ISA, "Special Registers": the SM a thread runs on, 0 to %nsmid - 1;
// the most SM and warp identifiers): the GPU's figures the launch gives, a block on the
// multiprocessor its index modulo their number would take; a launch that names no GPU refuses them.
TEST(PtxExecutor, MultiprocessorRegistersFollowTheLaunchsGpu) {
  const std::string ptx = R"(
.version 8.8
.target sm_80
.address_size 64
.visible .entry where(
	.param .u64 where_param_0
)
{
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<5>;
	ld.param.u64 	%rd1, [where_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r1, %ctaid.x;
	mov.u32 	%r2, %smid;
	mov.u32 	%r3, %nsmid;
	mov.u32 	%r4, %nwarpid;
	mul.wide.u32 	%rd3, %r1, 12;
	add.s64 	%rd4, %rd2, %rd3;
	st.global.u32 	[%rd4], %r2;
	st.global.u32 	[%rd4+4], %r3;
	st.global.u32 	[%rd4+8], %r4;
	ret;
}
)";
  Emulator emulator(parse_module(ptx, "where.ptx"));
  std::vector<uint32_t> out(3 * 5, 99);
  emulator.add_global(out.data(), out.size() * 4);
  const std::vector<uint8_t> params = emulator.pack_params("where", {reinterpret_cast<uint64_t>(out.data())});
  ArchLimits gpu{"a GPU of 3 multiprocessors", 48 << 10, 64 << 10, 0, 3, 48};
  emulator.launch("where", params, {{5, 1, 1}, {1, 1, 1}, 0, 0, gpu});
  for (uint32_t block = 0; block < 5; ++block) {
    EXPECT_EQ(out[3 * block], block % 3) << block;  // %smid
    EXPECT_EQ(out[3 * block + 1], 3u);              // %nsmid
    EXPECT_EQ(out[3 * block + 2], 48u);             // %nwarpid
  }
  EXPECT_NE(refusal([&] { emulator.launch("where", params, {{5, 1, 1}, {1, 1, 1}, 0, 0, {}}); })
                .find("mov.u32: reads %smid, and the launch names no GPU"),
            std::string::npos);
}

TEST(PtxExecutor, Tf32ProductsTakeOnlyConvertedOperands) {
  Emulator emulator(parse_module(R"(
.version 8.8
.target sm_80
.address_size 64
.visible .entry tf32_mma(
	.param .u64 tf32_mma_param_0,
	.param .u64 tf32_mma_param_1
)
.maxntid 32, 1, 1
{
	.reg .b32 	%r<4>;
	.reg .f32 	%f<5>;
	.reg .b64 	%rd<6>;
	ld.param.u64 	%rd1, [tf32_mma_param_0];
	ld.param.u64 	%rd2, [tf32_mma_param_1];
	cvta.to.global.u64 	%rd3, %rd1;
	cvta.to.global.u64 	%rd4, %rd2;
	mov.u32 	%r1, %tid.x;
	mul.wide.u32 	%rd5, %r1, 4;
	add.s64 	%rd3, %rd3, %rd5;
	ld.global.u32 	%r2, [%rd3];
	mov.f32 	%f1, 0f00000000;
	mov.f32 	%f2, 0f00000000;
	mov.f32 	%f3, 0f00000000;
	mov.f32 	%f4, 0f00000000;
	mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%f1,%f2,%f3,%f4}, {%r2,%r2,%r2,%r2}, {%r2,%r2}, {%f1,%f2,%f3,%f4};
	add.s64 	%rd4, %rd4, %rd5;
	st.global.f32 	[%rd4], %f4;
	ret;
}
)", "tf32.ptx"));
  const auto run = [&](float x) {
    std::vector<float> in(32, x), out(32, -1);
    emulator.clear_globals();
    emulator.add_global(in.data(), 128);
    emulator.add_global(out.data(), 128);
    emulator.launch("tf32_mma",
                    emulator.pack_params("tf32_mma", {reinterpret_cast<uint64_t>(in.data()), reinterpret_cast<uint64_t>(out.data())}),
                    {{1, 1, 1}, {32, 1, 1}, 0, 0});
    return out;
  };
  for (float d : run(1.5f)) EXPECT_EQ(d, 8 * 1.5f * 1.5f);  // (1.5 is a TF32 value: its low bits are zero)
  // One m16n8k8 of the warp: 2 x 16 x 8 x 8 = 2048 FLOPs, counted over its 32 lanes.
  {
    std::vector<float> in(32, 1.5f), out(32);
    emulator.clear_globals();
    emulator.add_global(in.data(), 128);
    emulator.add_global(out.data(), 128);
    const LaunchCounts counts = emulator.launch(
        "tf32_mma", emulator.pack_params("tf32_mma", {reinterpret_cast<uint64_t>(in.data()), reinterpret_cast<uint64_t>(out.data())}),
        {{1, 1, 1}, {32, 1, 1}, 0, 0});
    EXPECT_EQ(counts.flops, 2048.0);
    EXPECT_EQ(counts.by_class[static_cast<size_t>(InstructionClass::Mma)], 32u);
  }
  const std::string why = refusal([&] { run(1.0f + 0x1p-20f); });
  EXPECT_NE(why.find("a .tf32 operand (0x3f800008) that no cvt to tf32 made"), std::string::npos) << why;
}

// racecheck and initcheck of shared memory: each thread writes its word, then (with or without a
// bar.sync, as the second parameter says) its neighbour's word is read and stored in the block's
// part of the output; a thread reading a word nobody wrote is caught as well.
constexpr const char* kNeighbours = R"(
.version 8.8
.target sm_80
.address_size 64
.visible .entry neighbour(
	.param .u64 neighbour_param_0,
	.param .u32 neighbour_param_1,
	.param .u32 neighbour_param_2
)
.maxntid 64, 1, 1
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<10>;
	.reg .b64 	%rd<5>;
	.shared .align 4 .b8 buf[256];
	ld.param.u64 	%rd1, [neighbour_param_0];
	ld.param.u32 	%r5, [neighbour_param_1];
	ld.param.u32 	%r8, [neighbour_param_2];
	mov.u32 	%r1, %tid.x;
	shl.b32 	%r2, %r1, 2;
	mov.u32 	%r3, buf;
	add.s32 	%r4, %r3, %r2;
	setp.eq.s32 	%p2, %r8, 0;
	@%p2 bra 	$L__no_first;
	st.shared.u32 	[%r4], %r8;
	bar.sync 	0;
$L__no_first:
	st.shared.u32 	[%r4], %r1;
	setp.eq.s32 	%p1, %r5, 0;
	@%p1 bra 	$L__skip;
	bar.sync 	0;
$L__skip:
	add.s32 	%r6, %r1, 1;
	and.b32 	%r6, %r6, 63;
	shl.b32 	%r6, %r6, 2;
	add.s32 	%r6, %r3, %r6;
	ld.shared.u32 	%r7, [%r6];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r9, %ctaid.x;
	shl.b32 	%r9, %r9, 6;
	add.s32 	%r9, %r9, %r1;
	mul.wide.u32 	%rd3, %r9, 4;
	add.s64 	%rd4, %rd2, %rd3;
	st.global.u32 	[%rd4], %r7;
	ret;
}
)";

TEST(PtxExecutor, SharedMemoryRacesAndUninitialisedReadsAreCaught) {
  Emulator emulator(parse_module(kNeighbours, "neighbours.ptx"));
  std::vector<uint32_t> out(128);
  emulator.add_global(out.data(), 512);
  const auto run = [&](uint32_t barrier, uint32_t first, uint64_t seed) {
    emulator.launch("neighbour",
                    emulator.pack_params("neighbour", {reinterpret_cast<uint64_t>(out.data()), barrier, first}),
                    {{2, 1, 1}, {64, 1, 1}, 0, seed});
  };
  for (uint64_t seed : {0u, 7u}) {
    run(1, 0, seed);  // (the barrier between: right in any order)
    for (uint32_t i = 0; i < 128; ++i) EXPECT_EQ(out[i], (i + 1) % 64);
    // No barrier, every word written once before (a barrier after that): the neighbour's word is
    // read and written by two threads with nothing between.
    const std::string race = refusal([&] { run(0, 99, seed); });
    EXPECT_NE(race.find("racecheck: "), std::string::npos) << race;
    EXPECT_NE(race.find("with no barrier between"), std::string::npos) << race;
    // No barrier and nothing written before: a warp's lanes execute together, so each reads the
    // word its neighbour has just written, with nothing between (a read of a word no thread wrote:
    // InitcheckPassesOverAlignmentPaddingOnly).
    const std::string unordered = refusal([&] { run(0, 0, seed); });
    // (which lane reads first is the schedule's: lane 0 in order, another under a seed)
    EXPECT_NE(unordered.find(seed == 0 ? "thread (0,0,0): ld.shared.u32: racecheck: reads shared memory at offset 4, "
                                         "which thread (1,0,0) wrote at line 28"
                                       : "ld.shared.u32: racecheck: reads shared memory at offset "),
              std::string::npos)
        << unordered;
  }
}

// A load widened into a variable's alignment padding before the next variable (three floats of a
// 16-byte-aligned array of three read as one ld.v4, as NVRTC makes of a multi-tensor kernel's
// sums: bertc check --device ptx failed every token-classification config on it) is no read of
// uninitialised memory: no correct kernel keeps anything there. The same load of a fourth element
// the array declares but no thread wrote is.
constexpr const char* kWidened = R"(
.version 8.8
.target sm_80
.address_size 64
.visible .entry widened(
	.param .u64 widened_param_0
)
.maxntid 32, 1, 1
{
	.reg .b32 	%r<10>;
	.reg .b64 	%rd<3>;
	.shared .align 16 .b8 sums[BYTES];
	.shared .align 16 .b8 after[16];
	ld.param.u64 	%rd1, [widened_param_0];
	mov.u32 	%r5, sums;
	st.shared.u32 	[%r5], 1;
	st.shared.u32 	[%r5+4], 2;
	st.shared.u32 	[%r5+8], 3;
	ld.shared.v4.u32 	{%r1, %r2, %r3, %r4}, [%r5];
	add.s32 	%r6, %r1, %r2;
	add.s32 	%r7, %r6, %r3;
	cvta.to.global.u64 	%rd2, %rd1;
	st.global.u32 	[%rd2], %r7;
	ret;
}
)";

TEST(PtxExecutor, InitcheckPassesOverAlignmentPaddingOnly) {
  uint32_t out = 0;
  auto run = [&](const std::string& bytes) {
    std::string text = kWidened;
    text.replace(text.find("BYTES"), 5, bytes);
    Emulator emulator(parse_module(text, "widened.ptx"));
    emulator.add_global(&out, sizeof out);
    emulator.launch("widened", emulator.pack_params("widened", {reinterpret_cast<uint64_t>(&out)}),
                    {{1, 1, 1}, {1, 1, 1}, 0, 0});
  };
  run("12");
  EXPECT_EQ(out, 6u);
  const std::string unwritten = refusal([&] { run("16"); });
  EXPECT_NE(unwritten.find("initcheck: reads shared memory at offset 12 that no thread of the block wrote"),
            std::string::npos)
      << unwritten;
}

// racecheck of global memory, across blocks: each block stores its word (every block the same
// word when `collide`), fences (when `fenced`), counts itself with an atomic, fences again, and
// the last block to count sums every block's word (the pattern of bertc's reductions' last block).
// Without the fences the last block reads other blocks' words that nothing orders before its
// reads; two blocks storing one word race whatever the fences.
constexpr const char* kLastBlock = R"(
.version 8.8
.target sm_80
.address_size 64
.visible .entry last_block(
	.param .u64 last_block_param_0,
	.param .u64 last_block_param_1,
	.param .u64 last_block_param_2,
	.param .u32 last_block_param_3,
	.param .u32 last_block_param_4
)
{
	.reg .pred 	%p<5>;
	.reg .b32 	%r<12>;
	.reg .b64 	%rd<10>;
	ld.param.u64 	%rd1, [last_block_param_0];
	ld.param.u64 	%rd2, [last_block_param_1];
	ld.param.u64 	%rd3, [last_block_param_2];
	ld.param.u32 	%r1, [last_block_param_3];
	ld.param.u32 	%r2, [last_block_param_4];
	cvta.to.global.u64 	%rd4, %rd1;
	cvta.to.global.u64 	%rd5, %rd2;
	cvta.to.global.u64 	%rd6, %rd3;
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %nctaid.x;
	setp.ne.s32 	%p1, %r2, 0;
	selp.u32 	%r5, 0, %r3, %p1;
	mul.wide.u32 	%rd7, %r5, 4;
	add.s64 	%rd8, %rd4, %rd7;
	add.s32 	%r6, %r3, 1;
	st.global.u32 	[%rd8], %r6;
	setp.ne.s32 	%p2, %r1, 0;
	@%p2 membar.gl;
	atom.global.add.u32 	%r7, [%rd5], 1;
	@%p2 fence.sc.gpu;
	add.s32 	%r8, %r4, -1;
	setp.ne.s32 	%p3, %r7, %r8;
	@%p3 bra 	$L__done;
	mov.u32 	%r9, 0;
	mov.u32 	%r10, 0;
	mov.u64 	%rd9, %rd4;
$L__loop:
	ld.global.u32 	%r11, [%rd9];
	add.s32 	%r9, %r9, %r11;
	add.s64 	%rd9, %rd9, 4;
	add.s32 	%r10, %r10, 1;
	setp.lt.u32 	%p4, %r10, %r4;
	@%p4 bra 	$L__loop;
	st.global.u32 	[%rd6], %r9;
$L__done:
	ret;
}
)";

// racecheck of global memory in a block: thread 0 stores a word that every other thread then
// reads, with or without a bar.sync between (the second parameter).
constexpr const char* kHandOff = R"(
.version 8.8
.target sm_80
.address_size 64
.visible .entry hand_off(
	.param .u64 hand_off_param_0,
	.param .u32 hand_off_param_1
)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<5>;
	.reg .b64 	%rd<5>;
	ld.param.u64 	%rd1, [hand_off_param_0];
	ld.param.u32 	%r1, [hand_off_param_1];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r2, %tid.x;
	setp.eq.s32 	%p1, %r2, 0;
	@%p1 st.global.u32 	[%rd2], 42;
	setp.eq.s32 	%p2, %r1, 0;
	@%p2 bra 	$L__skip;
	bar.sync 	0;
$L__skip:
	@%p1 bra 	$L__done;
	ld.global.u32 	%r3, [%rd2];
	mul.wide.u32 	%rd3, %r2, 4;
	add.s64 	%rd4, %rd2, %rd3;
	st.global.u32 	[%rd4], %r3;
$L__done:
	ret;
}
)";

TEST(PtxExecutor, GlobalMemoryRacesAreCaughtWithinALaunch) {
  for (uint64_t seed : {0u, 7u}) {
    Emulator emulator(parse_module(kLastBlock, "last_block.ptx"));
    std::vector<uint32_t> words(4, 0);
    uint32_t counter = 0, sum = 0;
    for (void* p : {static_cast<void*>(words.data()), static_cast<void*>(&counter), static_cast<void*>(&sum)})
      emulator.add_global(p, p == words.data() ? 16 : 4);
    const auto run = [&](uint32_t fenced, uint32_t collide) {
      counter = 0, sum = 0;
      emulator.launch("last_block",
                      emulator.pack_params("last_block", {reinterpret_cast<uint64_t>(words.data()),
                                                          reinterpret_cast<uint64_t>(&counter),
                                                          reinterpret_cast<uint64_t>(&sum), fenced, collide}),
                      {{4, 1, 1}, {1, 1, 1}, 0, seed});
    };
    run(1, 0);
    EXPECT_EQ(sum, 1u + 2 + 3 + 4);
    const std::string unfenced = refusal([&] { run(0, 0); });
    EXPECT_NE(unfenced.find("ld.global.u32: racecheck: reads global memory at"), std::string::npos) << unfenced;
    EXPECT_NE(unfenced.find("which thread (0,0,0) of block ("), std::string::npos) << unfenced;
    EXPECT_NE(unfenced.find("wrote at line 31 in this launch with nothing ordering the two (blocks of one launch run in "
                            "no set order"),
              std::string::npos)
        << unfenced;
    const std::string collided = refusal([&] { run(1, 1); });
    EXPECT_NE(collided.find("st.global.u32: racecheck: writes global memory at"), std::string::npos) << collided;
    EXPECT_NE(collided.find("wrote at line 31"), std::string::npos) << collided;
  }
  for (uint64_t seed : {0u, 7u}) {
    Emulator emulator(parse_module(kHandOff, "hand_off.ptx"));
    std::vector<uint32_t> out(64, 0);
    emulator.add_global(out.data(), out.size() * 4);
    const auto run = [&](uint32_t barrier) {
      emulator.launch("hand_off",
                      emulator.pack_params("hand_off", {reinterpret_cast<uint64_t>(out.data()), barrier}),
                      {{1, 1, 1}, {64, 1, 1}, 0, seed});
    };
    run(1);
    for (uint32_t i = 0; i < 64; ++i) EXPECT_EQ(out[i], 42u) << i;
    const std::string race = refusal([&] { run(0); });
    EXPECT_NE(race.find("racecheck: "), std::string::npos) << race;
    EXPECT_NE(race.find("global memory at"), std::string::npos) << race;
    EXPECT_NE(race.find("of this block"), std::string::npos) << race;
    EXPECT_NE(race.find("a missing bar.sync"), std::string::npos) << race;
  }
}

// Blocks of one grid counting into one word with a plain load, a wait of some 600 instructions and
// a store (no atomic): run one at a time every increment lands; run side by side, blocks load the
// word before others store it and increments are lost, as on a GPU.
constexpr const char* kLostUpdate = R"(
.version 8.8
.target sm_80
.address_size 64
.visible .entry lost_update(
	.param .u64 lost_update_param_0
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<4>;
	.reg .b64 	%rd<3>;
	ld.param.u64 	%rd1, [lost_update_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	ld.global.u32 	%r1, [%rd2];
	mov.u32 	%r2, 0;
$L__wait:
	add.s32 	%r2, %r2, 1;
	setp.lt.u32 	%p1, %r2, 300;
	@%p1 bra 	$L__wait;
	add.s32 	%r3, %r1, 1;
	st.global.u32 	[%rd2], %r3;
	ret;
}
)";

TEST(PtxExecutor, ResidentBlocksInterleave) {
  Emulator emulator(parse_module(kLostUpdate, "lost_update.ptx"));
  uint32_t counter = 0;
  emulator.add_global(&counter, 4);
  const std::vector<uint8_t> params = emulator.pack_params("lost_update", {reinterpret_cast<uint64_t>(&counter)});
  const auto count = [&](uint32_t resident, uint64_t seed, bool racecheck) {
    counter = 0;
    LaunchConfig config{{8, 1, 1}, {1, 1, 1}, 0, seed};
    config.global_racecheck = racecheck;
    config.resident_blocks = resident;
    emulator.launch("lost_update", params, config);
    return counter;
  };
  for (uint64_t seed : {1u, 7u, 99u}) {
    EXPECT_EQ(count(1, seed, false), 8u) << seed;
    EXPECT_LT(count(4, seed, false), 8u) << seed;  // (4 at once: at least one load before another's store)
    // racecheck names the race whichever way the blocks run
    for (uint32_t resident : {1u, 4u}) {
      const std::string race = refusal([&] { count(resident, seed, true); });
      EXPECT_NE(race.find("racecheck: "), std::string::npos) << race;
      EXPECT_NE(race.find("global memory at"), std::string::npos) << race;
    }
  }
  EXPECT_EQ(count(4, 0, false), 8u);  // (seed 0: index order, one block at a time)
  // The last-block pattern holds side by side too, under racecheck, whichever block counts last
  // (a block's second fence after the last one read its word is no race); unfenced it is one.
  Emulator last(parse_module(kLastBlock, "last_block.ptx"));
  std::vector<uint32_t> words(8, 0);
  uint32_t block_count = 0, sum = 0;
  for (void* p : {static_cast<void*>(words.data()), static_cast<void*>(&block_count), static_cast<void*>(&sum)})
    last.add_global(p, p == words.data() ? 32 : 4);
  const auto run = [&](uint32_t fenced, uint64_t seed) {
    block_count = 0, sum = 0;
    LaunchConfig config{{8, 1, 1}, {1, 1, 1}, 0, seed};
    config.resident_blocks = 8;
    last.launch("last_block",
                last.pack_params("last_block", {reinterpret_cast<uint64_t>(words.data()),
                                                reinterpret_cast<uint64_t>(&block_count),
                                                reinterpret_cast<uint64_t>(&sum), fenced, 0}),
                config);
  };
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    run(1, seed);
    EXPECT_EQ(sum, 36u) << seed;
    EXPECT_NE(refusal([&] { run(0, seed); }).find("racecheck: reads global memory at"), std::string::npos) << seed;
  }
}

// Blocks side by side keep their own barriers for racecheck: block `barrier_block` hands a word from
// thread 0 to the others across a bar.sync, the other block without one, each reading after a wait
// of some 900 instructions (rounds of the blocks in between). The other block's race is found under
// every schedule, though the first block's barrier may come between its store and its reads (a
// barrier shared by the running blocks ordered them, and the race went unseen).
constexpr const char* kHandOffByBlock = R"(
.version 8.8
.target sm_80
.address_size 64
.visible .entry hand_off_by_block(
	.param .u64 hand_off_by_block_param_0,
	.param .u32 hand_off_by_block_param_1
)
{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<7>;
	ld.param.u64 	%rd1, [hand_off_by_block_param_0];
	ld.param.u32 	%r1, [hand_off_by_block_param_1];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r2, %tid.x;
	mov.u32 	%r4, %ctaid.x;
	mul.wide.u32 	%rd5, %r4, 256;
	add.s64 	%rd6, %rd2, %rd5;
	setp.eq.s32 	%p1, %r2, 0;
	@%p1 st.global.u32 	[%rd6], 42;
	setp.ne.s32 	%p2, %r4, %r1;
	@%p2 bra 	$L__skip;
	bar.sync 	0;
$L__skip:
	mov.u32 	%r5, 0;
$L__wait:
	add.s32 	%r5, %r5, 1;
	setp.lt.u32 	%p3, %r5, 300;
	@%p3 bra 	$L__wait;
	@%p1 bra 	$L__done;
	ld.global.u32 	%r3, [%rd6];
	mul.wide.u32 	%rd3, %r2, 4;
	add.s64 	%rd4, %rd6, %rd3;
	st.global.u32 	[%rd4], %r3;
$L__done:
	ret;
}
)";

TEST(PtxExecutor, ResidentBlocksKeepTheirOwnBarriersForRacecheck) {
  Emulator emulator(parse_module(kHandOffByBlock, "hand_off_by_block.ptx"));
  std::vector<uint32_t> out(128, 0);
  emulator.add_global(out.data(), out.size() * 4);
  const auto run = [&](uint32_t barrier_block, uint64_t seed) {
    LaunchConfig config{{2, 1, 1}, {64, 1, 1}, 0, seed};
    config.resident_blocks = 2;
    emulator.launch("hand_off_by_block",
                    emulator.pack_params("hand_off_by_block", {reinterpret_cast<uint64_t>(out.data()), barrier_block}),
                    config);
  };
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    for (uint32_t barrier_block : {0u, 1u}) {
      const std::string race = refusal([&] { run(barrier_block, seed); });
      EXPECT_NE(race.find("racecheck: "), std::string::npos) << seed << ": " << race;
      EXPECT_NE(race.find("block (" + std::to_string(1 - barrier_block) + ",0,0)"), std::string::npos) << seed << ": " << race;
    }
  }
}

// What racecheck remembers of a launch is bounded (GlobalRaces' most_bytes, a page of 4 KiB at a
// time): a race on memory past it goes unseen and covered() says so; a race inside it is found.
TEST(PtxExecutor, GlobalRacecheckSaysWhenALaunchOutgrewIt) {
  GlobalRaces races(4096);
  races.begin_launch();
  races.begin_block(0, 1);
  EXPECT_FALSE(races.write(0, 1, 4096 * 10, 4));
  EXPECT_TRUE(races.covered());
  EXPECT_FALSE(races.write(0, 1, 4096 * 20, 4));  // (a second page: not remembered)
  EXPECT_FALSE(races.covered());
  races.begin_block(1, 1);
  EXPECT_FALSE(races.write(0, 2, 4096 * 20, 4));  // (another block's store to it: unseen)
  const auto found = races.write(0, 2, 4096 * 10, 4);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->kind, GlobalHazard::Kind::WriteAfterWrite);
  EXPECT_EQ(found->address, 4096u * 10);
  EXPECT_EQ(found->other_block, 0u);
  EXPECT_EQ(found->other_pc, 1u);
  // The emulator's launches start it afresh; racecheck off, the unsynchronised hand-off passes.
  Emulator emulator(parse_module(kHandOff, "hand_off.ptx"));
  std::vector<uint32_t> out(64, 0);
  emulator.add_global(out.data(), out.size() * 4);
  LaunchConfig config{{1, 1, 1}, {64, 1, 1}, 0, 0};
  config.global_racecheck = false;
  const LaunchCounts counts =
      emulator.launch("hand_off", emulator.pack_params("hand_off", {reinterpret_cast<uint64_t>(out.data()), 0}), config);
  EXPECT_EQ(counts.global_racecheck_partial, 0u);
}

// A launch over the GPU's limits is refused as its driver refuses it: shared memory past what a
// block may use (a P40's 48 KiB, here a made-up 128 bytes), registers past a block's, a block or
// grid of an impossible shape.
TEST(PtxExecutor, LaunchesOverTheArchsLimitsAreRefused) {
  Emulator emulator(parse_module(kNeighbours, "neighbours.ptx"));
  std::vector<uint32_t> out(128);
  emulator.add_global(out.data(), 512);
  const std::vector<uint8_t> params =
      emulator.pack_params("neighbour", {reinterpret_cast<uint64_t>(out.data()), 1, 0});
  const auto launch = [&](Dim3 grid, Dim3 block, ArchLimits limits) {
    return refusal([&] { emulator.launch("neighbour", params, {grid, block, 0, 0, limits}); });
  };
  EXPECT_EQ(launch({2, 1, 1}, {64, 1, 1}, {"Test GPU", 256, 64 << 10, 0}), "(accepted)");  // (at the limits: runs)
  EXPECT_NE(launch({2, 1, 1}, {64, 1, 1}, {"Test GPU", 128, 64 << 10, 0})
                .find("kernel neighbour: a launch Test GPU refuses: 256 bytes of shared memory a block, and a block "
                      "on it may use 128 at most"),
            std::string::npos);
  EXPECT_NE(launch({2, 1, 1}, {64, 1, 1}, {"Test GPU", 48 << 10, 8192, 255})
                .find("255 registers a thread x 64 threads = 16384 registers a block, more than its 8192"),
            std::string::npos);
  EXPECT_NE(launch({1, 70000, 1}, {64, 1, 1}, {}).find("a grid of 1x70000x1 blocks"), std::string::npos);
  EXPECT_NE(launch({1, 1, 1}, {1, 1, 65}, {}).find("a block of 1x1x65 threads"), std::string::npos);
}

// Shared-memory bank conflicts counted on known patterns: a warp writes a 32 x 32 table row by row
// (32 conflict-free requests), then each lane reads the word lane x stride: stride 1 is one
// wavefront, stride 32 (every lane in bank 0) is a 32-way conflict, stride 2 a 2-way one.
TEST(PtxExecutor, SharedBankConflictsAreCountedAsTheBanksServeThem) {
  Emulator emulator(parse_module(R"(
.version 8.8
.target sm_80
.address_size 64
.visible .entry strided(
	.param .u64 strided_param_0,
	.param .u32 strided_param_1
)
.maxntid 32, 1, 1
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<16>;
	.reg .b64 	%rd<5>;
	.shared .align 4 .b8 table[4096];
	ld.param.u64 	%rd1, [strided_param_0];
	ld.param.u32 	%r5, [strided_param_1];
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r3, table;
	shl.b32 	%r2, %r1, 2;
	add.s32 	%r4, %r3, %r2;
	mov.u32 	%r10, 0;
$L__init:
	shl.b32 	%r11, %r10, 7;
	add.s32 	%r12, %r4, %r11;
	st.shared.u32 	[%r12], %r1;
	add.s32 	%r10, %r10, 1;
	setp.lt.u32 	%p1, %r10, 32;
	@%p1 bra 	$L__init;
	bar.sync 	0;
	mul.lo.s32 	%r13, %r1, %r5;
	and.b32 	%r13, %r13, 1023;
	shl.b32 	%r13, %r13, 2;
	add.s32 	%r13, %r3, %r13;
	ld.shared.u32 	%r14, [%r13];
	cvta.to.global.u64 	%rd2, %rd1;
	mul.wide.u32 	%rd3, %r1, 4;
	add.s64 	%rd4, %rd2, %rd3;
	st.global.u32 	[%rd4], %r14;
	ret;
}
)", "strided.ptx"));
  std::vector<uint32_t> out(32);
  emulator.add_global(out.data(), 128);
  const auto run = [&](uint32_t stride) {
    return emulator.launch("strided", emulator.pack_params("strided", {reinterpret_cast<uint64_t>(out.data()), stride}),
                           {{1, 1, 1}, {32, 1, 1}, 0, 7});
  };
  for (const auto& [stride, read_wavefronts] : {std::pair{1u, 1u}, {2u, 2u}, {32u, 32u}}) {
    const LaunchCounts c = run(stride);
    EXPECT_EQ(c.shared_requests, 33u) << stride;  // (32 rows written, one read)
    EXPECT_EQ(c.shared_ideal_wavefronts, 33u) << stride;
    EXPECT_EQ(c.shared_wavefronts, 32u + read_wavefronts) << stride;
    for (uint32_t lane = 0; lane < 32; ++lane) EXPECT_EQ(out[lane], (lane * stride) % 32) << stride;
  }
  // Wider accesses are served in phases: 16 contiguous bytes a lane, a quarter-warp at a time (4).
  std::vector<LaneAccess> wide;
  for (uint32_t lane = 0; lane < 32; ++lane) wide.push_back({lane, lane * 16u, 16});
  EXPECT_EQ(shared_wavefronts(wide), 4u);
  EXPECT_EQ(shared_phases(wide), 4u);
}

// cp.async's shared writes are bank requests as stores are: each lane copies 16 bytes to shared
// offset 16 x lane x stride, then reads the first word back. The copies, a quarter-warp a phase:
// stride 1 conflict-free (4 wavefronts), stride 2 two lanes of a phase on each bank (8), stride 8
// eight (32); the reads of words 4, 8 and 32 apart take 4, 8 and 32 of one wavefront's phase.
TEST(PtxExecutor, AsyncCopiesWriteSharedMemoryThroughTheBanks) {
  Emulator emulator(parse_module(R"(
.version 8.8
.target sm_80
.address_size 64
.visible .entry async_strided(
	.param .u64 async_strided_param_0,
	.param .u64 async_strided_param_1,
	.param .u32 async_strided_param_2
)
.maxntid 32, 1, 1
{
	.reg .b32 	%r<16>;
	.reg .b64 	%rd<8>;
	.shared .align 16 .b8 table[4096];
	ld.param.u64 	%rd1, [async_strided_param_0];
	ld.param.u64 	%rd2, [async_strided_param_1];
	ld.param.u32 	%r5, [async_strided_param_2];
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r3, table;
	mul.lo.s32 	%r6, %r1, %r5;
	shl.b32 	%r6, %r6, 4;
	add.s32 	%r7, %r3, %r6;
	cvta.to.global.u64 	%rd3, %rd1;
	mul.wide.u32 	%rd4, %r1, 16;
	add.s64 	%rd5, %rd3, %rd4;
	cp.async.cg.shared.global [%r7], [%rd5], 16;
	cp.async.commit_group;
	cp.async.wait_group 0;
	bar.sync 	0;
	ld.shared.u32 	%r8, [%r7];
	cvta.to.global.u64 	%rd6, %rd2;
	mul.wide.u32 	%rd7, %r1, 4;
	add.s64 	%rd6, %rd6, %rd7;
	st.global.u32 	[%rd6], %r8;
	ret;
}
)", "async_strided.ptx"));
  alignas(128) std::array<uint32_t, 128> in;
  alignas(128) std::array<uint32_t, 32> out;
  for (uint32_t i = 0; i < in.size(); ++i) in[i] = i;
  emulator.add_global(in.data(), sizeof in);
  emulator.add_global(out.data(), sizeof out);
  for (const auto& [stride, wavefronts] : {std::pair{1u, 4u}, {2u, 8u}, {8u, 32u}}) {
    out.fill(0);
    const LaunchCounts c = emulator.launch(
        "async_strided",
        emulator.pack_params("async_strided", {reinterpret_cast<uint64_t>(in.data()), reinterpret_cast<uint64_t>(out.data()), stride}),
        {{1, 1, 1}, {32, 1, 1}, 0, 3});
    EXPECT_EQ(c.shared_requests, 2u) << stride;  // (the copy's writes, the read)
    EXPECT_EQ(c.shared_ideal_wavefronts, 4u + 1u) << stride;
    EXPECT_EQ(c.shared_wavefronts, 2 * wavefronts) << stride;
    for (uint32_t lane = 0; lane < 32; ++lane) EXPECT_EQ(out[lane], 4 * lane) << stride;
  }
}

// Global sectors counted on known patterns: a warp reads word lane x stride of an array aligned to
// 128 bytes and writes word lane of another (coalesced: 4 sectors of 32 bytes). Stride 1 reads 4
// sectors, stride 2 reads 8, stride 8 and 32 read one sector a lane (32); the fewest sectors the
// 128 distinct bytes could take is 4 every time.
TEST(PtxExecutor, GlobalSectorsAreCountedAsMemoryMovesThem) {
  Emulator emulator(parse_module(R"(
.version 8.8
.target sm_80
.address_size 64
.visible .entry gather(
	.param .u64 gather_param_0,
	.param .u64 gather_param_1,
	.param .u32 gather_param_2
)
.maxntid 32, 1, 1
{
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<9>;
	ld.param.u64 	%rd1, [gather_param_0];
	ld.param.u64 	%rd2, [gather_param_1];
	ld.param.u32 	%r1, [gather_param_2];
	mov.u32 	%r2, %tid.x;
	mul.lo.s32 	%r3, %r2, %r1;
	cvta.to.global.u64 	%rd3, %rd1;
	mul.wide.u32 	%rd4, %r3, 4;
	add.s64 	%rd5, %rd3, %rd4;
	ld.global.u32 	%r4, [%rd5];
	cvta.to.global.u64 	%rd6, %rd2;
	mul.wide.u32 	%rd7, %r2, 4;
	add.s64 	%rd8, %rd6, %rd7;
	st.global.u32 	[%rd8], %r4;
	ret;
}
)", "gather.ptx"));
  alignas(128) static std::array<uint32_t, 1024> in{};
  alignas(128) static std::array<uint32_t, 32> out{};
  for (uint32_t i = 0; i < in.size(); ++i) in[i] = i;
  emulator.add_global(in.data(), sizeof(in));
  emulator.add_global(out.data(), sizeof(out));
  for (const auto& [stride, read_sectors] : {std::pair{1u, 4u}, {2u, 8u}, {8u, 32u}, {32u, 32u}}) {
    const LaunchCounts c = emulator.launch(
        "gather",
        emulator.pack_params("gather", {reinterpret_cast<uint64_t>(in.data()), reinterpret_cast<uint64_t>(out.data()), stride}),
        {{1, 1, 1}, {32, 1, 1}, 0, 5});
    EXPECT_EQ(c.global_requests, 2u) << stride;  // (one load, one store: parameters are no global requests)
    EXPECT_EQ(c.global_sectors, read_sectors + 4u) << stride;
    EXPECT_EQ(c.global_ideal_sectors, 8u) << stride;
    for (uint32_t lane = 0; lane < 32; ++lane) EXPECT_EQ(out[lane], lane * stride) << stride;
    // By width: the load and the store, 4 bytes a lane, 32 lanes (the parameters' loads are no
    // memory traffic of the data's).
    const auto& global_loads = c.by_width[2];
    EXPECT_EQ(global_loads[access_width_index(4)], 32u) << stride;
    EXPECT_EQ(global_loads[access_width_index(8)], 0u) << stride;
    EXPECT_EQ(global_loads[access_width_index(16)], 0u) << stride;
    EXPECT_EQ(c.by_width[3][access_width_index(4)], 32u) << stride;
    EXPECT_EQ(c.by_width[0], (std::array<uint64_t, kAccessWidths>{})) << stride;  // (no shared memory)
  }
  // A lane's bytes: vectors of their elements, ldmatrix's 4 bytes a matrix; none for arithmetic.
  const auto bytes = [](const char* opcode) { return access_bytes(Instruction{decode_opcode(opcode)}); };
  EXPECT_EQ(bytes("ld.global.v4.f32"), 16u);
  EXPECT_EQ(bytes("st.shared.v2.f32"), 8u);
  EXPECT_EQ(bytes("ld.shared.u16"), 2u);
  EXPECT_EQ(bytes("ldmatrix.sync.aligned.m8n8.x4.shared.b16"), 16u);
  EXPECT_EQ(bytes("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16"), 4u);
  EXPECT_EQ(bytes("add.f32"), 0u);
  EXPECT_EQ(bytes("ld.param.u64"), 0u);
  EXPECT_EQ(access_width_index(16), 4u);
  // Lanes reading one word share its sector; 16 bytes a lane, side by side, take 16 sectors; a
  // request straddling a sector boundary takes both.
  std::vector<LaneAccess> same, wide;
  for (uint32_t lane = 0; lane < 32; ++lane) same.push_back({lane, 4096, 4}), wide.push_back({lane, 4096 + lane * 16u, 16});
  EXPECT_EQ(global_sectors(same), 1u);
  EXPECT_EQ(global_ideal_sectors(same), 1u);
  EXPECT_EQ(global_sectors(wide), 16u);
  EXPECT_EQ(global_ideal_sectors(wide), 16u);
  EXPECT_EQ(global_sectors({{0, 30, 4}}), 2u);
  EXPECT_EQ(global_ideal_sectors({{0, 30, 4}}), 1u);
}

// Projections on known counts: each part at its rate, the slowest one setting the time, a grid of
// fewer blocks than multiprocessors spread over those it has. (A GPU of round figures: 10
// multiprocessors at 1 GHz issuing 4 warp-instructions a clock, 1 TFLOP/s SIMT, 8 on tensor cores,
// 100 GB/s, 1 us a launch.)
TEST(PtxProjection, TheSlowestPartOfTheCountedWorkSetsTheTime) {
  const GpuRates gpu{"round", 10, 1.0, 4, 1.0, 8.0, 100.0, 1e-6};
  LaunchCounts simt;
  simt.thread_instructions = 32'000'000;  // 1 M warp-instructions: 25 us of issue
  simt.flops = 2e9, simt.blocks = 100;    // 2 ms of FMAs
  Projection p = project(simt, gpu);
  EXPECT_DOUBLE_EQ(p.issue_seconds, 25e-6);
  EXPECT_DOUBLE_EQ(p.simt_seconds, 2e-3);
  EXPECT_EQ(p.bound, Bound::Simt);
  EXPECT_DOUBLE_EQ(p.seconds, 2e-3 + 1e-6);
  simt.blocks = 2;  // two of ten multiprocessors busy: five times as long
  p = project(simt, gpu);
  EXPECT_DOUBLE_EQ(p.fill, 0.2);
  EXPECT_DOUBLE_EQ(p.seconds, 10e-3 + 1e-6);
  LaunchCounts copy;
  copy.global_sectors = 3'125'000, copy.blocks = 50;  // 100 MB at 100 GB/s
  p = project(copy, gpu);
  EXPECT_EQ(p.bound, Bound::Memory);
  EXPECT_DOUBLE_EQ(p.memory_seconds, 1e-3);
  LaunchCounts mma;
  mma.flops = mma.mma_flops = 8e9, mma.blocks = 10;
  p = project(mma, gpu);
  EXPECT_EQ(p.bound, Bound::Mma);
  EXPECT_DOUBLE_EQ(p.mma_seconds, 1e-3);
  EXPECT_DOUBLE_EQ(p.simt_seconds, 0.0);
  GpuRates no_tensor_cores = gpu;
  no_tensor_cores.mma_tflops = 0;
  EXPECT_THROW(project(mma, no_tensor_cores), std::invalid_argument);
}

// Occupancy on known shapes, a P40's multiprocessor (64 warps, 32 blocks, 64 K registers, 96 KiB
// of shared memory): each limit in turn the one that binds.
TEST(PtxProjection, OccupancyIsBoundByWhatRunsOutFirst) {
  GpuRates p40{"p40", 30, 1.531, 4, 11.76, 0, 346, 1e-6, 64, 32, 64 << 10, 96 << 10};
  Occupancy o = occupancy(256, 0, 0, p40);
  EXPECT_EQ(o.blocks, 8u);
  EXPECT_DOUBLE_EQ(o.warps_share, 1.0);
  EXPECT_EQ(o.limit, "warps");
  o = occupancy(32, 0, 0, p40);
  EXPECT_EQ(o.blocks, 32u);
  EXPECT_DOUBLE_EQ(o.warps_share, 0.5);
  EXPECT_EQ(o.limit, "blocks");
  o = occupancy(128, 40 << 10, 0, p40);
  EXPECT_EQ(o.blocks, 2u);
  EXPECT_DOUBLE_EQ(o.warps_share, 8.0 / 64);
  EXPECT_EQ(o.limit, "shared memory");
  o = occupancy(256, 0, 128, p40);  // (128 registers a thread: 4096 a warp, 32 K a block)
  EXPECT_EQ(o.blocks, 2u);
  EXPECT_DOUBLE_EQ(o.warps_share, 0.25);
  EXPECT_EQ(o.limit, "registers");
  o = occupancy(256, 0, 33, p40);  // (33 a thread: 1056 a warp, allocated as 1280)
  EXPECT_EQ(o.blocks, 6u);
  EXPECT_EQ(occupancy(64, 100 << 10, 0, p40).blocks, 0u);  // (more shared memory than it has)
}

// Warp votes, matches and the block's barrier reductions, as nvcc 13.0 emits them for sm_75 from
// __ballot_sync, __all_sync, __any_sync (lanes 0-15 of each warp, mask 0xffff), __uni_sync,
// __match_any_sync, __match_all_sync (of the value widened to 64 bits), __syncthreads_count,
// __syncthreads_and and __syncthreads_or; each thread writes its 8 results.
constexpr const char* kCollectives = R"(
.version 9.0
.target sm_75
.address_size 64
.visible .entry collectives(
	.param .u64 collectives_param_0,
	.param .u64 collectives_param_1
)
{
	.reg .pred 	%p<11>;
	.reg .b16 	%rs<2>;
	.reg .b32 	%r<34>;
	.reg .b64 	%rd<10>;
	ld.param.u64 	%rd3, [collectives_param_0];
	ld.param.u64 	%rd2, [collectives_param_1];
	mov.u32 	%r1, %tid.x;
	cvta.to.global.u64 	%rd4, %rd3;
	mul.wide.s32 	%rd5, %r1, 4;
	add.s64 	%rd6, %rd4, %rd5;
	ld.global.s32 	%rd1, [%rd6];
	setp.gt.s64 	%p3, %rd1, 0;
	mov.u32 	%r7, -1;
	vote.sync.ballot.b32 	%r2, %p3, %r7;
	vote.sync.all.pred 	%p2, %p3, %r7;
	shr.s32 	%r8, %r1, 31;
	shr.u32 	%r9, %r8, 27;
	add.s32 	%r10, %r1, %r9;
	and.b32  	%r11, %r10, -32;
	sub.s32 	%r12, %r1, %r11;
	setp.gt.s32 	%p4, %r12, 15;
	mov.u32 	%r33, 2;
	@%p4 bra 	$L__BB0_2;
	cvt.u32.u64 	%r13, %rd1;
	setp.lt.s32 	%p5, %r13, 0;
	mov.u32 	%r14, 65535;
	vote.sync.any.pred 	%p6, %p5, %r14;
	selp.u32 	%r33, 1, 0, %p6;
$L__BB0_2:
	cvt.u32.u64 	%r16, %rd1;
	setp.gt.s32 	%p7, %r16, 0;
	vote.sync.uni.pred 	%p8, %p7, %r7;
	selp.u32 	%r19, 1, 0, %p8;
	match.any.sync.b32 	%r20, %r16, %r7;
	match.all.sync.b64 	%r21|%p9, %rd1, %r7;
	selp.u32 	%r22, 1, 0, %p7;
	{ 
	.reg .pred 	%p1; 
	setp.ne.u32 	%p1, %r22, 0; 
	bar.red.popc.u32 	%r23, 0, %p1; 
	}
	{ 
	.reg .pred 	%p1; 
	.reg .pred 	%p2; 
	setp.ne.u32 	%p1, %r22, 0; 
	bar.red.and.pred 	%p2, 0, %p1; 
	selp.u32 	%r24, 1, 0, %p2; 
	}
	setp.eq.s32 	%p10, %r16, 0;
	selp.u32 	%r25, 1, 0, %p10;
	{ 
	.reg .pred 	%p1; 
	.reg .pred 	%p2; 
	setp.ne.u32 	%p1, %r25, 0; 
	bar.red.or.pred 	%p2, 0, %p1; 
	selp.u32 	%r26, 1, 0, %p2; 
	}
	shl.b32 	%r27, %r1, 3;
	cvta.to.global.u64 	%rd7, %rd2;
	mul.wide.s32 	%rd8, %r27, 4;
	add.s64 	%rd9, %rd7, %rd8;
	st.global.u32 	[%rd9], %r2;
	selp.u32 	%r28, 1, 0, %p2;
	st.global.u32 	[%rd9+4], %r28;
	st.global.u32 	[%rd9+8], %r33;
	st.global.u32 	[%rd9+12], %r19;
	st.global.u32 	[%rd9+16], %r20;
	st.global.u32 	[%rd9+20], %r21;
	st.global.u32 	[%rd9+24], %r23;
	shl.b32 	%r29, %r26, 1;
	selp.u16 	%rs1, 1, 0, %p9;
	mul.wide.u16 	%r30, %rs1, 4;
	or.b32  	%r31, %r30, %r24;
	or.b32  	%r32, %r31, %r29;
	st.global.u32 	[%rd9+28], %r32;
	ret;
}
)";

// The results the ISA's definitions give ("vote.sync", "match.sync", "bar.red"), worked out here
// from the inputs of a block of 64 threads: out[8t..8t+7] = ballot, all, any (2 where not asked),
// uni, match.any, match.all, popc, and | or << 1 | match.all's predicate << 2.
std::vector<uint32_t> collectives_by_definition(const std::vector<int32_t>& v) {
  std::vector<uint32_t> out(v.size() * 8);
  const auto lanes = [&](size_t t, auto keep) {  // the bits of t's warp's lanes for which keep(value, lane)
    uint32_t bits = 0;
    for (size_t l = 0; l < 32; ++l)
      if (keep(v[t / 32 * 32 + l], l)) bits |= 1u << l;
    return bits;
  };
  size_t positive = 0, zero = 0;
  for (int32_t x : v) positive += x > 0, zero += x == 0;
  for (size_t t = 0; t < v.size(); ++t) {
    const uint32_t ballot = lanes(t, [](int32_t x, size_t) { return x > 0; });
    const uint32_t alike = lanes(t, [&](int32_t x, size_t) { return x == v[t]; });
    out[t * 8 + 0] = ballot;
    out[t * 8 + 1] = ballot == 0xffffffffu;
    out[t * 8 + 2] = t % 32 < 16 ? lanes(t, [](int32_t x, size_t l) { return l < 16 && x < 0; }) != 0 : 2;
    out[t * 8 + 3] = ballot == 0 || ballot == 0xffffffffu;
    out[t * 8 + 4] = alike;
    out[t * 8 + 5] = alike == 0xffffffffu ? 0xffffffffu : 0;
    out[t * 8 + 6] = static_cast<uint32_t>(positive);
    out[t * 8 + 7] = (positive == v.size()) | (zero > 0) << 1 | (alike == 0xffffffffu) << 2;
  }
  return out;
}

TEST(PtxExecutor, VotesMatchesAndBarrierReductionsFollowTheIsa) {
  Emulator emulator(parse_module(kCollectives, "collectives.ptx"));
  // Mixed values (0, t, -t by t % 3: some lanes alike, some not) and all alike (every answer the
  // other way); shuffled and in order.
  std::vector<int32_t> mixed(64), alike(64, 5);
  for (int32_t t = 0; t < 64; ++t) mixed[static_cast<size_t>(t)] = t % 3 == 0 ? 0 : t % 3 == 1 ? t : -t;
  for (const auto& in : {mixed, alike})
    for (uint64_t seed : {0, 11}) {
      std::vector<uint32_t> out(64 * 8, 0xdeadbeef);
      emulator.clear_globals();
      emulator.add_global(in.data(), 256);
      emulator.add_global(out.data(), out.size() * 4);
      const LaunchCounts counts = emulator.launch(
          "collectives",
          emulator.pack_params("collectives",
                               {reinterpret_cast<uint64_t>(in.data()), reinterpret_cast<uint64_t>(out.data())}),
          {{1, 1, 1}, {64, 1, 1}, 0, seed});
      EXPECT_EQ(out, collectives_by_definition(in)) << "seed " << seed;
      // Counted as warp exchanges: 64 threads' ballot, all, uni and two matches, and 32 threads' any.
      EXPECT_EQ(counts.by_class[static_cast<size_t>(InstructionClass::WarpExchange)], 64u * 5 + 32u);
      EXPECT_EQ(counts.by_class[static_cast<size_t>(InstructionClass::Barrier)], 64u * 3);
    }
}

// A hand-off between warps through a named barrier with a thread count (ISA: "bar, barrier"):
// warp 0 writes shared memory and arrives at barrier 1 without waiting (bar.arrive); warp 1 waits
// there (bar.sync) and then reads what warp 0 wrote, backwards.
constexpr const char* kBarrierHandOff = R"(
.version 8.8
.target sm_70
.address_size 64
.visible .entry handoff(
	.param .u64 handoff_param_0
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<4>;
	.shared .align 4 .b8 buf[128];
	ld.param.u64 	%rd1, [handoff_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, buf;
	setp.ge.u32 	%p1, %r1, 32;
	@%p1 bra 	$L_consumer;
	shl.b32 	%r3, %r1, 2;
	add.s32 	%r4, %r2, %r3;
	mul.lo.s32 	%r5, %r1, 7;
	st.shared.u32 	[%r4], %r5;
	bar.arrive 	1, 64;
	bra.uni 	$L_done;
$L_consumer:
	bar.sync 	1, 64;
	sub.s32 	%r3, 63, %r1;
	shl.b32 	%r3, %r3, 2;
	add.s32 	%r4, %r2, %r3;
	ld.shared.u32 	%r5, [%r4];
	sub.s32 	%r6, %r1, 32;
	mul.wide.u32 	%rd3, %r6, 4;
	add.s64 	%rd3, %rd2, %rd3;
	st.global.u32 	[%rd3], %r5;
$L_done:
	ret;
}
)";

TEST(PtxExecutor, NamedBarriersHandOffBetweenWarps) {
  const auto run = [](const std::string& ptx, uint64_t seed) {
    Emulator emulator(parse_module(ptx, "handoff.ptx"));
    std::vector<uint32_t> out(32, 0);
    emulator.add_global(out.data(), 128);
    emulator.launch("handoff", emulator.pack_params("handoff", {reinterpret_cast<uint64_t>(out.data())}),
                    {{1, 1, 1}, {64, 1, 1}, 0, seed});
    return out;
  };
  for (uint64_t seed : {0, 3}) {
    const std::vector<uint32_t> out = run(kBarrierHandOff, seed);
    for (uint32_t i = 0; i < 32; ++i) EXPECT_EQ(out[i], (31 - i) * 7) << i << ", seed " << seed;
  }
  const auto edited = [](std::string text, const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  // Planted: the hand-off without its barrier (racecheck: warp 1 reads what warp 0 wrote with
  // nothing between); the two sides naming different thread counts.
  const std::string unordered =
      edited(edited(kBarrierHandOff, "\tbar.arrive \t1, 64;\n", ""), "\tbar.sync \t1, 64;\n", "");
  EXPECT_NE(
      refusal([&] { run(unordered, 0); }).find("racecheck: reads shared memory at offset 124, which thread (31,0,0)"),
      std::string::npos);
  const std::string miscounted = edited(kBarrierHandOff, "bar.arrive \t1, 64;", "bar.arrive \t1, 32;");
  EXPECT_NE(refusal([&] { run(miscounted, 0); }).find("barrier 1 awaited with thread counts"), std::string::npos)
      << refusal([&] { run(miscounted, 0); });
}

TEST(PtxExecutor, ChecksCatchEachPlantedBug) {
  std::vector<float> in(100), out(100);
  {  // a read past the buffer: n = 101 for 100 floats
    Fixture fx;
    fx.emulator.add_global(in.data(), 400);
    fx.emulator.add_global(out.data(), 400);
    const std::string why = refusal([&] {
      fx.launch("twice", {reinterpret_cast<uint64_t>(in.data()), reinterpret_cast<uint64_t>(out.data()), 101}, 2, 64);
    });
    EXPECT_NE(why.find("test.ptx:30: kernel twice, block (1,0,0), thread (36,0,0): ld.global.f32: 4 bytes at "),
              std::string::npos)
        << why;
    EXPECT_NE(why.find("outside every allocation"), std::string::npos) << why;
  }
  {  // a misaligned pointer
    Fixture fx;
    fx.emulator.add_global(in.data(), 400);
    fx.emulator.add_global(out.data(), 400);
    const std::string why = refusal([&] {
      fx.launch("twice", {reinterpret_cast<uint64_t>(in.data()) + 2, reinterpret_cast<uint64_t>(out.data()), 10}, 1, 64);
    });
    EXPECT_NE(why.find("misaligned: 4 bytes at"), std::string::npos) << why;
  }
  {  // a shuffle reading lanes its mask leaves out (a block of 16 threads, mask 0xffff, lane 0 ^ 16)
    Fixture fx;
    std::vector<uint32_t> words(64), sums(2);
    fx.emulator.add_global(words.data(), 256);
    fx.emulator.add_global(sums.data(), 8);
    const std::string why = refusal([&] {
      fx.launch("warp_sum", {reinterpret_cast<uint64_t>(words.data()), reinterpret_cast<uint64_t>(sums.data()), 0xffff},
                1, 16);
    });
    EXPECT_NE(why.find("shfl.sync.bfly.b32: lane 0 reads lane 16, which is not in the shuffle"), std::string::npos) << why;
    // and executed by lanes its mask leaves out (64 threads, mask 0xffff: lanes 16-31 not in it)
    const std::string outside = refusal([&] {
      fx.launch("warp_sum", {reinterpret_cast<uint64_t>(words.data()), reinterpret_cast<uint64_t>(sums.data()), 0xffff},
                1, 64);
    });
    EXPECT_NE(
        outside.find("thread (16,0,0): shfl.sync.bfly.b32: a lane waits at a collective whose mask leaves it out"),
        std::string::npos)
        << outside;
  }
  {  // a vote whose mask leaves out lanes that execute it (every lane at __any_sync(0xffff, ...))
    std::string text = kCollectives;
    const std::string branch = "\t@%p4 bra \t$L__BB0_2;\n";
    text.erase(text.find(branch), branch.size());
    Emulator emulator(parse_module(text, "vote.ptx"));
    std::vector<int32_t> values(64, 1);
    std::vector<uint32_t> results(64 * 8);
    emulator.add_global(values.data(), 256);
    emulator.add_global(results.data(), results.size() * 4);
    const std::string why = refusal([&] {
      emulator.launch("collectives",
                      emulator.pack_params("collectives", {reinterpret_cast<uint64_t>(values.data()),
                                                           reinterpret_cast<uint64_t>(results.data())}),
                      {{1, 1, 1}, {64, 1, 1}, 0, 0});
    });
    EXPECT_NE(why.find("vote.sync.any.pred: a lane waits at a collective whose mask leaves it out"), std::string::npos)
        << why;
  }
  {  // a barrier in divergent code: only lane 0 of each warp reaches bar.sync
    std::string text = kKernels;
    const std::string from = "$L__BB1_2:\n\tbar.sync \t0;", to = "\tbar.sync \t0;\n$L__BB1_2:";
    text.replace(text.find(from), from.size(), to);
    Emulator emulator(parse_module(text, "diverged.ptx"));
    std::vector<uint32_t> words(64), sums(2);
    emulator.add_global(words.data(), 256);
    emulator.add_global(sums.data(), 8);
    const std::string why = refusal([&] {
      emulator.launch("warp_sum",
                      emulator.pack_params("warp_sum", {reinterpret_cast<uint64_t>(words.data()),
                                                        reinterpret_cast<uint64_t>(sums.data()), 0xffffffff}),
                      {{1, 1, 1}, {64, 1, 1}, 0, 0});
    });
    EXPECT_NE(why.find("waits at a barrier that other threads of the block never reach"), std::string::npos) << "[" << why << "]";
  }
  {  // a launch over the kernel's .maxntid
    Fixture fx;
    EXPECT_NE(refusal([&] { fx.launch("twice", {0, 0, 0}, 1, 128); }).find("more than its .maxntid 64x1x1"),
              std::string::npos);
  }
  {  // .reqntid (ISA: each dimension as it says, or the launch fails), and not with .maxntid; .maxnreg read
    std::string required = kKernels;
    required.replace(required.find(".maxntid 64, 1, 1"), 17, ".reqntid 64, 1, 1\n.maxnreg 32");
    Emulator emulator(parse_module(required, "required.ptx"));
    EXPECT_EQ(emulator.module().entry("twice")->reqntid[0], 64);
    EXPECT_EQ(emulator.module().entry("twice")->maxnreg, 32);
    std::vector<float> in(64), out(64);
    emulator.add_global(in.data(), 256);
    emulator.add_global(out.data(), 256);
    const auto launch = [&](uint32_t threads) {
      emulator.launch("twice",
                      emulator.pack_params("twice", {reinterpret_cast<uint64_t>(in.data()),
                                                     reinterpret_cast<uint64_t>(out.data()), 64}),
                      {{1, 1, 1}, {threads, 1, 1}, 0, 0});
    };
    EXPECT_NE(refusal([&] { launch(32); }).find("a block of 32x1x1 threads, and its .reqntid requires 64x1x1"),
              std::string::npos);  // (fewer threads: under .maxntid it ran)
    launch(64);
    std::string both = kKernels;
    both.replace(both.find(".maxntid 64, 1, 1"), 17, ".maxntid 64, 1, 1\n.reqntid 64, 1, 1");
    EXPECT_NE(refusal([&] { parse_module(both, "both.ptx"); }).find("has both .maxntid and .reqntid"), std::string::npos);
  }
  {  // registers under the launch bounds, where no cubin gives ptxas's count (64 K a multiprocessor)
    Entry e;
    EXPECT_EQ(launch_bounds_registers(e, 64 << 10), 0u);  // (no bounds: not known)
    e.maxntid[0] = 256;
    EXPECT_EQ(launch_bounds_registers(e, 64 << 10), 255u);  // (256 a thread fit: the ISA's 255)
    e.minnctapersm = 2;
    EXPECT_EQ(launch_bounds_registers(e, 64 << 10), 128u);
    e.maxntid[0] = 192, e.minnctapersm = 4;  // (65536 / 768 = 85.3: 80, allocated 8 a thread)
    EXPECT_EQ(launch_bounds_registers(e, 64 << 10), 80u);
    e.maxntid[0] = 100;  // (4 warps' threads: 128)
    EXPECT_EQ(launch_bounds_registers(e, 64 << 10), 128u);
    e.maxnreg = 32;  // (.maxnreg says it)
    EXPECT_EQ(launch_bounds_registers(e, 64 << 10), 32u);
  }
}

// Atomics of shared memory under the shared checks (ISA "atom": they read and write): a counter
// no thread initialised is initcheck's; one thread's initialisation that no barrier orders before
// the others' atomics is a race (a weak and a strong access, unordered); with the barrier, the
// threads' atomics among themselves are not; each warp's atomics one request on the banks.
TEST(PtxExecutor, SharedAtomicsAreCheckedAndCounted) {
  const std::string kernel = R"(
.version 8.8
.target sm_80
.address_size 64
.visible .entry count(
	.param .u64 count_param_0
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<3>;
	.shared .align 4 .u32 counter;
	ld.param.u64 	%rd1, [count_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, counter;
	setp.ne.u32 	%p1, %r1, 0;
INIT
	atom.shared.add.u32 	%r3, [%r2], 1;
	bar.sync 	0;
	@%p1 bra 	$L_done;
	ld.shared.u32 	%r4, [%r2];
	st.global.u32 	[%rd2], %r4;
$L_done:
	ret;
}
)";
  const auto run = [&](const std::string& init, uint64_t seed = 3) {
    std::string ptx = kernel;
    ptx.replace(ptx.find("INIT"), 4, init);
    Emulator emulator(parse_module(ptx, "count.ptx"));
    uint32_t out = 0;
    emulator.add_global(&out, sizeof out);
    const LaunchCounts c = emulator.launch("count", emulator.pack_params("count", {reinterpret_cast<uint64_t>(&out)}),
                                           {{1, 1, 1}, {64, 1, 1}, 0, seed});
    EXPECT_EQ(out, 64u);
    return c;
  };
  const std::string store = "\tmov.u32 \t%r5, 0;\n\t@!%p1 st.shared.u32 \t[%r2], %r5;\n";
  EXPECT_NE(refusal([&] { run(""); }).find("initcheck: reads shared memory at offset 0 that no thread of the block wrote"),
            std::string::npos);
  // (in index order, thread 0 stores first: thread 1's atomic meets its store; shuffled, a thread's
  // atomic may come first, before anything is written: initcheck's then)
  const std::string unordered = refusal([&] { run(store, 0); });
  EXPECT_NE(unordered.find("atom.shared.add.u32: racecheck: writes shared memory at offset 0, which thread (0,0,0) "
                           "wrote"),
            std::string::npos)
      << unordered;
  const LaunchCounts c = run(store + "\tbar.sync \t0;\n");
  // (two warps' atomics, two requests; thread 0's store and load, one each)
  EXPECT_EQ(c.shared_requests, 4u);
  // A plain read after other threads' atomics with no barrier between: a race, with whichever of
  // the two last atomics it meets (thread 1's read after thread 0's and its own atomic).
  SharedShadow shadow;
  shadow.begin_block(4, 1, {{0, 4}});
  ASSERT_FALSE(shadow.write(0, 1, 0, 4));
  shadow.barrier();
  ASSERT_FALSE(shadow.atomic(0, 2, 0, 4));
  ASSERT_FALSE(shadow.atomic(1, 2, 0, 4));  // (atomics among themselves: no race)
  const std::optional<SharedHazard> read = shadow.read(1, 3, 0, 4);
  ASSERT_TRUE(read);
  EXPECT_EQ(read->kind, SharedHazard::Kind::ReadAfterWrite);
  EXPECT_EQ(read->other_thread, 0u);
}

// A warp's lanes at two shuffles (one a branch's side): each lane's operands are its own
// instruction's, which the emulator does not run together: refused, never run with the first
// lane's registers; and a shuffle without .sync (no member mask) refused with its line.
TEST(PtxExecutor, CollectivesItCannotRunAreRefusedWithTheirLine) {
  const std::string head = ".version 9.0\n.target sm_75\n.address_size 64\n";
  const std::string two = head + R"(.visible .entry two()
{
	.reg .pred %p<2>;
	.reg .b32 %r<3>;
	mov.u32 %r1, %tid.x;
	setp.lt.u32 %p1, %r1, 16;
	@%p1 bra $L_low;
	shfl.sync.idx.b32 %r2, %r1, 0, 31, -1;
	bra.uni $L_end;
$L_low:
	shfl.sync.idx.b32 %r2, %r1, 1, 31, -1;
$L_end:
	ret;
}
)";
  auto launch = [](const std::string& text) {
    return refusal([&] {
      Emulator emulator(parse_module(text, "two.ptx"));
      emulator.launch("two", emulator.pack_params("two", {}), {{1, 1, 1}, {32, 1, 1}});
    });
  };
  EXPECT_NE(launch(two).find("in one warp collective: lanes at two instructions of other operands are not run together"),
            std::string::npos)
      << launch(two);
  // (two of the same operands, __syncwarp() on both sides of a branch, run together)
  std::string synced = two;
  for (int i = 0; i < 2; ++i) {
    const size_t at = synced.find("shfl.sync.idx.b32");
    synced.replace(at, synced.find(';', at) - at, "bar.warp.sync -1");
  }
  Emulator both_sides(parse_module(synced, "synced.ptx"));
  EXPECT_NO_THROW(both_sides.launch("two", both_sides.pack_params("two", {}), {{1, 1, 1}, {32, 1, 1}}));
  std::string unsynced = two;
  unsynced.replace(unsynced.find("shfl.sync.idx.b32 %r2, %r1, 0, 31, -1"), 37, "shfl.idx.b32 %r2, %r1, 0, 31");
  EXPECT_NE(launch(unsynced).find("two.ptx:11: kernel two, block (0,0,0), thread (16,0,0): shfl.idx.b32: shfl.idx.b32 "
                                  "without .sync is not run"),
            std::string::npos)
      << launch(unsynced);
}

// A launch's counts survive the words the emulated CUDA driver hands them over in; words of another
// layout are refused rather than misread.
TEST(PtxCounts, RoundTripThroughWords) {
  LaunchCounts c;
  c.thread_instructions = 123456789;
  c.by_class[3] = 7;
  c.by_class[12] = 9;
  c.flops = 2.5e9;
  c.shared_wavefronts = 11;
  c.global_ideal_sectors = 13;
  c.by_width[2][4] = 17;
  c.mma_flops = 0.75;
  c.block_cycles = 19;
  c.by_op[static_cast<Op>(2)] = 23;
  c.by_op[static_cast<Op>(5)] = 29;
  const std::vector<uint64_t> words = counts_to_words(c);
  const LaunchCounts back = counts_from_words(words);
  EXPECT_EQ(back.thread_instructions, 123456789u);
  EXPECT_EQ(back.by_class[3], 7u);
  EXPECT_EQ(back.by_class[12], 9u);
  EXPECT_EQ(back.flops, 2.5e9);
  EXPECT_EQ(back.shared_wavefronts, 11u);
  EXPECT_EQ(back.global_ideal_sectors, 13u);
  EXPECT_EQ(back.by_width[2][4], 17u);
  EXPECT_EQ(back.mma_flops, 0.75);
  EXPECT_EQ(back.block_cycles, 19u);
  EXPECT_EQ(back.by_op, c.by_op);
  EXPECT_EQ(counts_to_words(back), words);
  std::vector<uint64_t> other = words;
  other[0] ^= 1;
  EXPECT_THROW(counts_from_words(other), std::invalid_argument);
  EXPECT_THROW(counts_from_words(std::span(words).first(5)), std::invalid_argument);
}

}  // namespace
}  // namespace bertc::ptx
