// ptx/calls: device functions (.func) called from kernels, run by inlining, on the PTX nvcc 13.0
// emits for __noinline__ functions and on PTX written here: arguments, return values (a struct of
// two, at their offsets), a function calling one twice, a divergent early ret and the warp
// reconverging after it; and the calls refused: recursion, an .extern function, a mismatched call.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ptx/executor.h"
#include "refusal.h"

namespace bertc::ptx {
namespace {

// nvcc -arch=sm_75 -ptx (CUDA 13.0) of:
//   __device__ __noinline__ float scale(float x, int k) { return x * k + 1.0f; }
//   __device__ __noinline__ void store2(float* p, float a, float b) { p[0] = a; p[1] = b; }
//   __device__ __noinline__ int fact(int n) { return n <= 1 ? 1 : n * fact(n - 1); }
//   struct Pair { float a; double b; };
//   __device__ __noinline__ Pair mk(float a) { Pair p{a, 2.0 * a}; return p; }
//   extern "C" __global__ void k(float* out, int n) {
//     int i = threadIdx.x;
//     if (i < n) {
//       float v = scale(out[i], i);
//       store2(out + 2 * n + 2 * i, v, (float)fact(i % 6));
//       Pair p = mk(v);
//       out[i] = p.a + (float)p.b;
//     }
//   }
// (fact's recursion NVVM made a loop.)
constexpr const char* kNvccCalls = R"(
.version 9.0
.target sm_75
.address_size 64


.func  (.param .b32 func_retval0) _Z5scalefi(
	.param .b32 _Z5scalefi_param_0,
	.param .b32 _Z5scalefi_param_1
)
{
	.reg .f32 	%f<4>;
	.reg .b32 	%r<2>;


	ld.param.f32 	%f1, [_Z5scalefi_param_0];
	ld.param.u32 	%r1, [_Z5scalefi_param_1];
	cvt.rn.f32.s32 	%f2, %r1;
	fma.rn.f32 	%f3, %f2, %f1, 0f3F800000;
	st.param.f32 	[func_retval0+0], %f3;
	ret;

}
.func _Z6store2Pfff(
	.param .b64 _Z6store2Pfff_param_0,
	.param .b32 _Z6store2Pfff_param_1,
	.param .b32 _Z6store2Pfff_param_2
)
{
	.reg .f32 	%f<3>;
	.reg .b64 	%rd<3>;


	ld.param.u64 	%rd1, [_Z6store2Pfff_param_0];
	ld.param.f32 	%f1, [_Z6store2Pfff_param_1];
	ld.param.f32 	%f2, [_Z6store2Pfff_param_2];
	cvta.to.global.u64 	%rd2, %rd1;
	st.global.f32 	[%rd2], %f1;
	st.global.f32 	[%rd2+4], %f2;
	ret;

}
.func  (.param .b32 func_retval0) _Z4facti(
	.param .b32 _Z4facti_param_0
)
{
	.reg .pred 	%p<6>;
	.reg .b32 	%r<45>;


	ld.param.u32 	%r41, [_Z4facti_param_0];
	setp.lt.s32 	%p1, %r41, 2;
	mov.u32 	%r44, 1;
	@%p1 bra 	$L__BB2_6;

	not.b32 	%r24, %r41;
	max.s32 	%r25, %r24, -3;
	add.s32 	%r26, %r25, %r41;
	add.s32 	%r1, %r26, 2;
	add.s32 	%r27, %r26, 1;
	mov.u32 	%r44, 1;
	and.b32  	%r43, %r1, 3;
	setp.lt.u32 	%p2, %r27, 3;
	@%p2 bra 	$L__BB2_4;

	sub.s32 	%r37, %r1, %r43;
	mov.u32 	%r44, 1;
	mov.u32 	%r35, %r41;

$L__BB2_3:
	mul.lo.s32 	%r29, %r35, %r44;
	add.s32 	%r30, %r35, -1;
	mul.lo.s32 	%r31, %r30, %r29;
	add.s32 	%r32, %r35, -2;
	mul.lo.s32 	%r33, %r32, %r31;
	add.s32 	%r41, %r35, -4;
	add.s32 	%r34, %r35, -3;
	mul.lo.s32 	%r44, %r34, %r33;
	add.s32 	%r37, %r37, -4;
	setp.ne.s32 	%p3, %r37, 0;
	mov.u32 	%r35, %r41;
	@%p3 bra 	$L__BB2_3;

$L__BB2_4:
	setp.eq.s32 	%p4, %r43, 0;
	@%p4 bra 	$L__BB2_6;

$L__BB2_5:
	.pragma "nounroll";
	add.s32 	%r16, %r41, -1;
	mul.lo.s32 	%r44, %r41, %r44;
	add.s32 	%r43, %r43, -1;
	setp.ne.s32 	%p5, %r43, 0;
	mov.u32 	%r41, %r16;
	@%p5 bra 	$L__BB2_5;

$L__BB2_6:
	st.param.b32 	[func_retval0+0], %r44;
	ret;

}
.func  (.param .align 8 .b8 func_retval0[16]) _Z2mkf(
	.param .b32 _Z2mkf_param_0
)
{
	.reg .f32 	%f<2>;
	.reg .f64 	%fd<3>;


	ld.param.f32 	%f1, [_Z2mkf_param_0];
	cvt.f64.f32 	%fd1, %f1;
	add.f64 	%fd2, %fd1, %fd1;
	st.param.f32 	[func_retval0+0], %f1;
	st.param.f64 	[func_retval0+8], %fd2;
	ret;

}
	// .globl	k
.visible .entry k(
	.param .u64 k_param_0,
	.param .u32 k_param_1
)
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<7>;
	.reg .b32 	%r<11>;
	.reg .f64 	%fd<2>;
	.reg .b64 	%rd<10>;


	ld.param.u64 	%rd1, [k_param_0];
	ld.param.u32 	%r2, [k_param_1];
	mov.u32 	%r1, %tid.x;
	setp.ge.s32 	%p1, %r1, %r2;
	@%p1 bra 	$L__BB4_2;

	cvta.to.global.u64 	%rd2, %rd1;
	mul.wide.s32 	%rd3, %r1, 4;
	add.s64 	%rd4, %rd2, %rd3;
	ld.global.f32 	%f1, [%rd4];
	{ // callseq 0, 0
	.reg .b32 temp_param_reg;
	.param .b32 param0;
	st.param.f32 	[param0+0], %f1;
	.param .b32 param1;
	st.param.b32 	[param1+0], %r1;
	.param .b32 retval0;
	call.uni (retval0), 
	_Z5scalefi, 
	(
	param0, 
	param1
	);
	ld.param.f32 	%f2, [retval0+0];
	} // callseq 0
	shl.b32 	%r3, %r2, 1;
	cvt.s64.s32 	%rd5, %r3;
	shl.b32 	%r4, %r1, 1;
	cvt.s64.s32 	%rd6, %r4;
	add.s64 	%rd7, %rd5, %rd6;
	shl.b64 	%rd8, %rd7, 2;
	add.s64 	%rd9, %rd1, %rd8;
	mul.hi.s32 	%r5, %r1, 715827883;
	shr.u32 	%r6, %r5, 31;
	add.s32 	%r7, %r5, %r6;
	mul.lo.s32 	%r8, %r7, 6;
	sub.s32 	%r9, %r1, %r8;
	{ // callseq 1, 0
	.reg .b32 temp_param_reg;
	.param .b32 param0;
	st.param.b32 	[param0+0], %r9;
	.param .b32 retval0;
	call.uni (retval0), 
	_Z4facti, 
	(
	param0
	);
	ld.param.b32 	%r10, [retval0+0];
	} // callseq 1
	cvt.rn.f32.s32 	%f3, %r10;
	{ // callseq 2, 0
	.reg .b32 temp_param_reg;
	.param .b64 param0;
	st.param.b64 	[param0+0], %rd9;
	.param .b32 param1;
	st.param.f32 	[param1+0], %f2;
	.param .b32 param2;
	st.param.f32 	[param2+0], %f3;
	call.uni 
	_Z6store2Pfff, 
	(
	param0, 
	param1, 
	param2
	);
	} // callseq 2
	{ // callseq 3, 0
	.reg .b32 temp_param_reg;
	.param .b32 param0;
	st.param.f32 	[param0+0], %f2;
	.param .align 8 .b8 retval0[16];
	call.uni (retval0), 
	_Z2mkf, 
	(
	param0
	);
	ld.param.f32 	%f4, [retval0+0];
	ld.param.f64 	%fd1, [retval0+8];
	} // callseq 3
	cvt.rn.f32.f64 	%f5, %fd1;
	add.f32 	%f6, %f4, %f5;
	st.global.f32 	[%rd4], %f6;

$L__BB4_2:
	ret;

}

)";

TEST(PtxCalls, FunctionsNvccLeftUninlinedRunWithTheirArgumentsAndResults) {
  const Module module = parse_module(kNvccCalls, "calls.ptx");
  // An inlined function's labels name its instructions where they landed: fact's loop head
  // ($L__BB2_3, the second call of the kernel) is its mul.lo.
  const Entry& k = *module.entry("k");
  const int loop = k.labels.at("$L__BB2_3@_Z4facti#1");
  ASSERT_LT(static_cast<size_t>(loop), k.body.size());
  EXPECT_EQ(k.body[static_cast<size_t>(loop)].opcode.text, "mul.lo.s32");
  for (const auto& [name, index] : k.labels) EXPECT_LE(static_cast<size_t>(index), k.body.size()) << name;
  Emulator emulator(module);
  constexpr int n = 20;
  std::vector<float> out(4 * n, -1.0f);
  for (int i = 0; i < n; ++i) out[static_cast<size_t>(i)] = 0.25f * static_cast<float>(i) - 1.5f;
  const std::vector<float> in = out;
  emulator.add_global(out.data(), out.size() * 4);
  emulator.launch("k", emulator.pack_params("k", {reinterpret_cast<uint64_t>(out.data()), n}), {{1, 1, 1}, {32, 1, 1}});
  for (int i = 0; i < n; ++i) {
    const auto at = static_cast<size_t>(i);
    // scale: fma.rn, one rounding of x * k + 1; mk: the pair (v, 2v in f64), its f64 rounded back.
    const float v = std::fma(static_cast<float>(i), in[at], 1.0f);
    int fact = 1;
    for (int k = 2; k <= i % 6; ++k) fact *= k;
    EXPECT_EQ(out[at], v + static_cast<float>(2.0 * static_cast<double>(v))) << i;
    EXPECT_EQ(out[2 * n + 2 * at], v) << i;
    EXPECT_EQ(out[2 * n + 2 * at + 1], static_cast<float>(fact)) << i;
  }
  for (size_t at = n; at < 2 * n; ++at) EXPECT_EQ(out[at], -1.0f) << at;  // (threads past n call nothing)
}

// halve_twice calls half_above_16 twice (a function's own call), which returns early for lanes
// below 16 (a divergent ret); the kernel's shuffle after the call needs every lane of the warp
// back together.
constexpr const char* kHalves = R"(
.version 9.0
.target sm_75
.address_size 64

.func (.param .b32 halved) half_above_16(.param .b32 x)
{
	.reg .pred %p<2>;
	.reg .b32 %r<3>;
	ld.param.u32 %r1, [x];
	st.param.b32 [halved+0], %r1;
	setp.lt.u32 %p1, %r1, 16;
	@%p1 ret;
	shr.u32 %r2, %r1, 1;
	st.param.b32 [halved+0], %r2;
	ret;
}
.func (.param .b32 twice) halve_twice(.param .b32 x)
{
	.reg .b32 %r<4>;
	ld.param.u32 %r1, [x];
	{
	.param .b32 param0;
	st.param.b32 [param0+0], %r1;
	.param .b32 retval0;
	call.uni (retval0), half_above_16, (param0);
	ld.param.b32 %r2, [retval0+0];
	}
	{
	.param .b32 param0;
	st.param.b32 [param0+0], %r2;
	.param .b32 retval0;
	call.uni (retval0), half_above_16, (param0);
	ld.param.b32 %r3, [retval0+0];
	}
	st.param.b32 [twice+0], %r3;
	ret;
}
.visible .entry halves(.param .u64 halves_param_0)
{
	.reg .b32 %r<5>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [halves_param_0];
	cvta.to.global.u64 %rd2, %rd1;
	mov.u32 %r1, %tid.x;
	{
	.param .b32 param0;
	st.param.b32 [param0+0], %r1;
	.param .b32 retval0;
	call.uni (retval0), halve_twice, (param0);
	ld.param.b32 %r2, [retval0+0];
	}
	shfl.sync.bfly.b32 %r3, %r2, 1, 31, -1;
	add.s32 %r4, %r2, %r3;
	mul.wide.u32 %rd3, %r1, 4;
	add.s64 %rd3, %rd2, %rd3;
	st.global.u32 [%rd3], %r4;
	ret;
}
)";

TEST(PtxCalls, ANestedCallsEarlyReturnReconvergesTheWarp) {
  const Module module = parse_module(kHalves, "halves.ptx");
  ASSERT_EQ(module.functions.size(), 2u);
  EXPECT_EQ(module.functions[0].returns.at(0).name, "halved");
  Emulator emulator(module);
  auto twice = [](uint32_t x) {
    for (int i = 0; i < 2; ++i) x = x < 16 ? x : x >> 1;
    return x;
  };
  for (const uint64_t seed : {0, 5}) {  // (lanes in order, and interleaved by a seeded scheduler)
    std::vector<uint32_t> out(64, 0xdeadbeef);
    emulator.clear_globals();
    emulator.add_global(out.data(), out.size() * 4);
    const LaunchCounts counts = emulator.launch(
        "halves", emulator.pack_params("halves", {reinterpret_cast<uint64_t>(out.data())}), {{1, 1, 1}, {64, 1, 1}, 0, seed});
    for (uint32_t t = 0; t < 64; ++t) EXPECT_EQ(out[t], twice(t) + twice(t ^ 1)) << t << " seed " << seed;
    // Each thread: the kernel's 12 instructions (its call among them), halve_twice's 9 (two calls),
    // and half_above_16's 4 to its early ret or 7 to its last, twice: lanes 0-15 return early
    // twice, 16-31 once (halved, 8-15), 32-63 never (halved, 16-31).
    uint64_t expected = 0;
    for (uint32_t t = 0; t < 64; ++t) expected += 12 + 9 + (t < 16 ? 4 + 4 : t < 32 ? 7 + 4 : 7 + 7);
    EXPECT_EQ(counts.thread_instructions, expected) << "seed " << seed;
  }
}

// A function defined after the kernel that calls it: LLVM's printer declares it first (a
// prototype, no .extern), and the call runs the definition.
TEST(PtxCalls, AFunctionDefinedAfterItsCallerRuns) {
  std::string text = kHalves;
  const std::string entry = text.substr(text.find(".visible .entry"));
  text.erase(text.find(".visible .entry"));
  const std::string prototype = ".func (.param .b32 twice) halve_twice(.param .b32 x);\n";
  text = text.substr(0, text.find(".func")) + prototype + entry + text.substr(text.find(".func"));
  Emulator emulator(parse_module(text, "later.ptx"));
  std::vector<uint32_t> out(32, 0);
  emulator.add_global(out.data(), out.size() * 4);
  emulator.launch("halves", emulator.pack_params("halves", {reinterpret_cast<uint64_t>(out.data())}), {{1, 1, 1}, {32, 1, 1}});
  auto twice = [](uint32_t x) {
    for (int i = 0; i < 2; ++i) x = x < 16 ? x : x >> 1;
    return x;
  };
  for (uint32_t t = 0; t < 32; ++t) EXPECT_EQ(out[t], twice(t) + twice(t ^ 1)) << t;
}

::testing::AssertionResult says(const std::string& message, const std::string& part) {
  if (message.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << message << "' does not say '" << part << "'";
}

// A call its guard passes over for some lanes: those skip the function (put's store), the others run it.
constexpr const char* kGuardedCall = R"(
.version 9.0
.target sm_75
.address_size 64

.func put(.param .b64 at, .param .b32 v)
{
	.reg .b32 %r<2>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [at];
	ld.param.u32 %r1, [v];
	st.global.u32 [%rd1], %r1;
	ret;
}
.visible .entry guarded(.param .u64 guarded_param_0)
{
	.reg .pred %p<2>;
	.reg .b32 %r<3>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [guarded_param_0];
	cvta.to.global.u64 %rd2, %rd1;
	mov.u32 %r1, %tid.x;
	add.s32 %r2, %r1, 100;
	mul.wide.u32 %rd3, %r1, 4;
	add.s64 %rd3, %rd2, %rd3;
	setp.lt.u32 %p1, %r1, 16;
	{
	.param .b64 param0;
	st.param.b64 [param0+0], %rd3;
	.param .b32 param1;
	st.param.b32 [param1+0], %r2;
	@%p1 call.uni put, (param0, param1);
	}
	ret;
}
)";

TEST(PtxCalls, LanesAGuardPassesOverSkipTheCall) {
  Emulator emulator(parse_module(kGuardedCall, "guarded.ptx"));
  std::vector<uint32_t> out(32, 0xdeadbeef);
  emulator.add_global(out.data(), out.size() * 4);
  emulator.launch("guarded", emulator.pack_params("guarded", {reinterpret_cast<uint64_t>(out.data())}),
                  {{1, 1, 1}, {32, 1, 1}});
  for (uint32_t t = 0; t < 32; ++t) EXPECT_EQ(out[t], t < 16 ? t + 100 : 0xdeadbeefu) << t;
}

std::string refusal(const std::string& text) {
  return testing::refusal<Error>([&] { parse_module(text, "bad.ptx"); });
}

TEST(PtxCalls, CallsItCannotRunAreRefusedNamingThem) {
  const std::string head = ".version 9.0\n.target sm_75\n.address_size 64\n";
  const std::string kernel = R"(
.visible .entry k()
{
	.reg .b32 %r<2>;
	{
	.param .b32 param0;
	st.param.b32 [param0+0], 7;
	.param .b32 retval0;
	call.uni (retval0), CALLEE, (param0);
	ld.param.b32 %r1, [retval0+0];
	}
	ret;
}
)";
  auto calling = [&](const std::string& callee) {
    std::string text = kernel;
    text.replace(text.find("CALLEE"), 6, callee);
    return text;
  };
  const std::string recursive = R"(
.func (.param .b32 r) down(.param .b32 a)
{
	.reg .b32 %r<3>;
	ld.param.u32 %r1, [a];
	{
	.param .b32 p0;
	st.param.b32 [p0+0], %r1;
	.param .b32 q0;
	call.uni (q0), down, (p0);
	ld.param.b32 %r2, [q0+0];
	}
	st.param.b32 [r+0], %r2;
	ret;
}
)";
  EXPECT_TRUE(says(refusal(head + recursive + calling("down")), "bad.ptx:13: calls down recursively (down -> down)"));
  EXPECT_TRUE(says(refusal(head + ".extern .func (.param .b32 func_retval0) vprintf(.param .b64 a, .param .b64 b);\n" +
                      calling("vprintf")), "calls vprintf, an .extern function the module does not define"));
  EXPECT_TRUE(says(refusal(head + calling("nowhere")), "calls nowhere, which the module does not declare"));
  const std::string two = ".func (.param .b32 r) two(.param .b32 a, .param .b32 b)\n{\n\tret;\n}\n";
  EXPECT_TRUE(says(refusal(head + two + calling("two")), "calls two with 1 arguments, and it takes 2"));
  const std::string wide = ".func (.param .b64 r) wide(.param .b32 a)\n{\n\tret;\n}\n";
  EXPECT_TRUE(says(refusal(head + wide + calling("wide")), "calls wide with retval0#1 of 4 bytes for its r of 8"));
  std::string indirect = head + kernel;
  indirect.replace(indirect.find("CALLEE"), 6, "%r1");
  EXPECT_TRUE(says(refusal(indirect), "a call through %r1 (an indirect call)"));
}

}  // namespace
}  // namespace bertc::ptx
