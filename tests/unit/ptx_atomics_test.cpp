// ptx/: atom and red with every operation the ISA defines for them (and, or, xor, min, max of
// signed and unsigned words, inc, dec, cas, exch), shf's funnel shift, prmt's modes and the lane
// mask special registers, on the PTX nvcc 13.0 emits for CUDA's atomic functions and on PTX
// written here; expected values from the ISA's definitions ("atom": inc(r, s) = r >= s ? 0 : r+1,
// dec(r, s) = r == 0 || r > s ? s : r-1, cas(r, s, t) = r == s ? t : r; "shf"; "prmt"'s table;
// "Special Registers").
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "ptx/executor.h"
#include "ptx/semantics.h"

namespace bertc::ptx {
namespace {

uint64_t run(const char* opcode, std::vector<uint64_t> sources) { return compute(decode_opcode(opcode), sources).value; }

TEST(PtxSemantics, FunnelShiftsTakeTheirWordOfTheTwo) {
  const uint64_t low = 0x89abcdef, high = 0x01234567;
  EXPECT_EQ(run("shf.l.wrap.b32", {low, high, 8}), 0x23456789u);   // high << 8 | low >> 24
  EXPECT_EQ(run("shf.r.wrap.b32", {low, high, 8}), 0x6789abcdu);   // high << 24 | low >> 8
  EXPECT_EQ(run("shf.r.wrap.b32", {low, high, 40}), 0x6789abcdu);  // (40 mod 32: 8)
  EXPECT_EQ(run("shf.r.clamp.b32", {low, high, 40}), high);        // (clamped to 32: the high word)
  EXPECT_EQ(run("shf.l.clamp.b32", {low, high, 40}), low);
  EXPECT_EQ(run("shf.l.clamp.b32", {low, high, 0}), high);
  EXPECT_ANY_THROW(run("shf.l.b32", {low, high, 0}));  // (neither .clamp nor .wrap)
}

// nvcc -arch=sm_75 -ptx (CUDA 13.0) of:
//   extern "C" __global__ void atomics(unsigned* word, int* signed_word, unsigned* old) {
//     const unsigned t = threadIdx.x;
//     atomicOr(&word[0], 1u << t);
//     atomicMax(&signed_word[0], (int)t - 40);
//     atomicMin(&signed_word[1], (int)t - 40);
//     atomicMax(&word[1], t * 3);
//     atomicXor(&word[2], t);
//     atomicAnd(&word[3], ~(1u << t));
//     if (t == 0) {
//       old[0] = atomicInc(&word[4], 2);  old[1] = atomicInc(&word[4], 2);  old[2] = atomicInc(&word[4], 2);
//       old[3] = atomicDec(&word[5], 3);  old[4] = atomicDec(&word[5], 3);  old[5] = atomicDec(&word[6], 3);
//       old[6] = atomicCAS(&word[7], 5u, 9u);  old[7] = atomicCAS(&word[7], 5u, 1u);
//       old[8] = atomicExch(&word[8], 42u);
//     }
//   }
// (~(1u << t) is made with shf.l.wrap of -2 by itself.)
constexpr const char* kAtomics = R"(
.version 9.0
.target sm_75
.address_size 64

	// .globl	atomics

.visible .entry atomics(
	.param .u64 atomics_param_0,
	.param .u64 atomics_param_1,
	.param .u64 atomics_param_2
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<26>;
	.reg .b64 	%rd<16>;


	ld.param.u64 	%rd3, [atomics_param_0];
	ld.param.u64 	%rd4, [atomics_param_1];
	ld.param.u64 	%rd2, [atomics_param_2];
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, 1;
	shl.b32 	%r3, %r2, %r1;
	cvta.to.global.u64 	%rd1, %rd3;
	atom.global.or.b32 	%r4, [%rd1], %r3;
	add.s32 	%r5, %r1, -40;
	cvta.to.global.u64 	%rd5, %rd4;
	atom.global.max.s32 	%r6, [%rd5], %r5;
	add.s64 	%rd6, %rd5, 4;
	atom.global.min.s32 	%r7, [%rd6], %r5;
	add.s64 	%rd7, %rd1, 4;
	mul.lo.s32 	%r8, %r1, 3;
	atom.global.max.u32 	%r9, [%rd7], %r8;
	add.s64 	%rd8, %rd1, 8;
	atom.global.xor.b32 	%r10, [%rd8], %r1;
	add.s64 	%rd9, %rd1, 12;
	mov.u32 	%r11, -2;
	shf.l.wrap.b32 	%r12, %r11, %r11, %r1;
	atom.global.and.b32 	%r13, [%rd9], %r12;
	setp.ne.s32 	%p1, %r1, 0;
	@%p1 bra 	$L__BB0_2;

	cvta.to.global.u64 	%rd10, %rd2;
	add.s64 	%rd11, %rd1, 16;
	atom.global.inc.u32 	%r14, [%rd11], 2;
	st.global.u32 	[%rd10], %r14;
	atom.global.inc.u32 	%r15, [%rd11], 2;
	st.global.u32 	[%rd10+4], %r15;
	atom.global.inc.u32 	%r16, [%rd11], 2;
	st.global.u32 	[%rd10+8], %r16;
	add.s64 	%rd12, %rd1, 20;
	atom.global.dec.u32 	%r17, [%rd12], 3;
	st.global.u32 	[%rd10+12], %r17;
	atom.global.dec.u32 	%r18, [%rd12], 3;
	st.global.u32 	[%rd10+16], %r18;
	add.s64 	%rd13, %rd1, 24;
	atom.global.dec.u32 	%r19, [%rd13], 3;
	st.global.u32 	[%rd10+20], %r19;
	add.s64 	%rd14, %rd1, 28;
	mov.u32 	%r20, 9;
	mov.u32 	%r21, 5;
	atom.global.cas.b32 	%r22, [%rd14], %r21, %r20;
	st.global.u32 	[%rd10+24], %r22;
	atom.global.cas.b32 	%r24, [%rd14], %r21, %r2;
	st.global.u32 	[%rd10+28], %r24;
	add.s64 	%rd15, %rd1, 32;
	atom.global.exch.b32 	%r25, [%rd15], 42;
	st.global.u32 	[%rd10+32], %r25;

$L__BB0_2:
	ret;

}

)";

TEST(PtxExecutor, AtomicsFollowTheIsasDefinitions) {
  Emulator emulator(parse_module(kAtomics, "atomics.ptx"));
  for (const uint64_t seed : {0, 3}) {  // (the reductions' results are the same in any order)
    std::vector<uint32_t> word = {0, 7, 0xff, 0xffffffffu, 0, 0, 7, 5, 11};
    std::vector<int32_t> signed_word = {-100, 100};
    std::vector<uint32_t> old(9, 0xdeadbeef);
    emulator.clear_globals();
    for (auto* buffer : {static_cast<void*>(word.data()), static_cast<void*>(signed_word.data()), static_cast<void*>(old.data())})
      emulator.add_global(buffer, buffer == signed_word.data() ? 8 : 36);
    emulator.launch("atomics",
                    emulator.pack_params("atomics", {reinterpret_cast<uint64_t>(word.data()),
                                                     reinterpret_cast<uint64_t>(signed_word.data()),
                                                     reinterpret_cast<uint64_t>(old.data())}),
                    {{1, 1, 1}, {20, 1, 1}, 0, seed});
    uint32_t xored = 0xff;
    for (uint32_t t = 0; t < 20; ++t) xored ^= t;
    EXPECT_EQ(word[0], 0xfffffu);                   // or of 1 << t, t < 20
    EXPECT_EQ(signed_word[0], 19 - 40);             // max of -100 and t - 40 (signed)
    EXPECT_EQ(signed_word[1], 0 - 40);              // min of 100 and t - 40 (signed)
    EXPECT_EQ(word[1], 19u * 3);                    // max of 7 and 3t (unsigned)
    EXPECT_EQ(word[2], xored);
    EXPECT_EQ(word[3], 0xfff00000u);                // and of ~(1 << t)
    EXPECT_EQ(old, (std::vector<uint32_t>{0, 1, 2, 0, 3, 7, 5, 9, 11}));
    EXPECT_EQ(word[4], 0u);                         // inc: 0 -> 1 -> 2 -> 0
    EXPECT_EQ(word[5], 2u);                         // dec: 0 -> 3 -> 2
    EXPECT_EQ(word[6], 3u);                         // dec: 7 -> 3
    EXPECT_EQ(word[7], 9u);                         // cas: 5 -> 9, then 9 kept
    EXPECT_EQ(word[8], 42u);                        // exch
  }
}

// atom.add.f32 of global memory flushes a subnormal operand and result to zero (ISA: "atom"; of
// shared memory it keeps them).
TEST(PtxExecutor, AFloatAtomicAddOfGlobalMemoryFlushesSubnormals) {
  const char* text = R"(
.version 9.0
.target sm_75
.address_size 64
.visible .entry addf(.param .u64 addf_param_0, .param .f32 addf_param_1)
{
	.reg .f32 %f<3>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [addf_param_0];
	ld.param.f32 %f1, [addf_param_1];
	cvta.to.global.u64 %rd2, %rd1;
	atom.global.add.f32 %f2, [%rd2], %f1;
	ret;
}
)";
  Emulator emulator(parse_module(text, "addf.ptx"));
  float word = 0.0f;
  emulator.add_global(&word, 4);
  const float subnormal = std::ldexp(1.0f, -140);
  emulator.launch("addf",
                  emulator.pack_params("addf", {reinterpret_cast<uint64_t>(&word), std::bit_cast<uint32_t>(subnormal)}),
                  {{1, 1, 1}, {1, 1, 1}});
  EXPECT_EQ(word, 0.0f);
  const float normal = 1.5f;
  emulator.launch("addf", emulator.pack_params("addf", {reinterpret_cast<uint64_t>(&word), std::bit_cast<uint32_t>(normal)}),
                  {{1, 1, 1}, {1, 1, 1}});
  EXPECT_EQ(word, 1.5f);
}

// prmt's modes: c[1:0] picks a row of the ISA's table (bytes 0-3 of a, 4-7 of b; d.b0 first).
TEST(PtxSemantics, PermuteModesTakeTheirRowOfTheIsasTable) {
  const uint64_t a = 0x33221100, b = 0x77665544;  // (byte i is 0x11 * i)
  EXPECT_EQ(run("prmt.b32.f4e", {a, b, 1}), 0x44332211u);  // bytes 1, 2, 3, 4
  EXPECT_EQ(run("prmt.b32.b4e", {a, b, 1}), 0x66770011u);  // bytes 1, 0, 7, 6
  EXPECT_EQ(run("prmt.b32.rc8", {a, b, 2}), 0x22222222u);
  EXPECT_EQ(run("prmt.b32.ecl", {a, b, 2}), 0x33222222u);  // bytes 2, 2, 2, 3
  EXPECT_EQ(run("prmt.b32.ecr", {a, b, 2}), 0x22221100u);  // bytes 0, 1, 2, 2
  EXPECT_EQ(run("prmt.b32.rc16", {a, b, 1}), 0x33223322u);  // bytes 2, 3, 2, 3
  EXPECT_EQ(run("prmt.b32.f4e", {a, b, 0xff00 | 3}), 0x66554433u);  // (only c[1:0] counts)
}

// The lane masks and the launch's dynamic shared memory size, lane by lane.
TEST(PtxExecutor, LaneMaskRegistersHoldTheirLanesBits) {
  const char* text = R"(
.version 9.0
.target sm_75
.address_size 64
.visible .entry masks(.param .u64 masks_param_0)
{
	.reg .b32 %r<7>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [masks_param_0];
	cvta.to.global.u64 %rd2, %rd1;
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, %lanemask_eq;
	mov.u32 %r3, %lanemask_le;
	mov.u32 %r4, %lanemask_ge;
	mov.u32 %r5, %lanemask_gt;
	mov.u32 %r6, %dynamic_smem_size;
	mul.wide.u32 %rd3, %r1, 20;
	add.s64 %rd3, %rd2, %rd3;
	st.global.u32 [%rd3], %r2;
	st.global.u32 [%rd3+4], %r3;
	st.global.u32 [%rd3+8], %r4;
	st.global.u32 [%rd3+12], %r5;
	st.global.u32 [%rd3+16], %r6;
	ret;
}
)";
  Emulator emulator(parse_module(text, "masks.ptx"));
  std::vector<uint32_t> out(32 * 5, 0xdeadbeef);
  emulator.add_global(out.data(), out.size() * 4);
  emulator.launch("masks", emulator.pack_params("masks", {reinterpret_cast<uint64_t>(out.data())}),
                  {{1, 1, 1}, {32, 1, 1}, 64});
  for (uint32_t lane = 0; lane < 32; ++lane) {
    const uint64_t bit = uint64_t{1} << lane;
    EXPECT_EQ(out[5 * lane], bit) << lane;
    EXPECT_EQ(out[5 * lane + 1], (2 * bit - 1) & 0xffffffff) << lane;       // this lane and those below
    EXPECT_EQ(out[5 * lane + 2], ~(bit - 1) & 0xffffffff) << lane;          // this lane and those above
    EXPECT_EQ(out[5 * lane + 3], ~(2 * bit - 1) & 0xffffffff) << lane;      // those above
    EXPECT_EQ(out[5 * lane + 4], 64u) << lane;
  }
}

}  // namespace
}  // namespace bertc::ptx
