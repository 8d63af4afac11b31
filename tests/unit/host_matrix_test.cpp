// The host emulation of the warp-level matrix instructions against the PTX ISA's own description
// of their register layouts, transcribed here independently of the prelude: one warp loads
// fragments element by element as the ISA's tables place them ("Matrix fragments for
// mma.m16n8k16 / mma.m8n8k4", "ldmatrix"), and the product or the loaded registers must be what
// the ISA says. The GEMM tests only show that the prelude agrees with itself; this shows it agrees
// with the hardware's definition. cp.async's deferred landing is checked too.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "codegen/host_compile.h"
#include "ir/float16.h"

namespace bertc::codegen {
namespace {

const char* kKernels = R"(
#include "bx.h"

// m16n8k16: a (16 x 16) and b (16 x 8) row-major 16-bit bits, d (16 x 8) floats; one warp.
template <bool BF16>
void mma16816(const bx_u16* a, const bx_u16* b, float* d) {
  const int lane = bx_tid_x(), group = lane >> 2, tig = lane & 3;
  bx_u16 ah[8], bh[4];
  for (int i = 0; i < 8; ++i) {  // ISA: row groupID (+8 for a2,a3,a6,a7); col tig*2 + (i&1) (+8 for i >= 4)
    const int row = group + ((i & 2) ? 8 : 0), col = tig * 2 + (i & 1) + (i >= 4 ? 8 : 0);
    ah[i] = a[row * 16 + col];
  }
  for (int i = 0; i < 4; ++i) {  // ISA: row tig*2 + (i&1) (+8 for i >= 2); col groupID
    const int row = tig * 2 + (i & 1) + (i >= 2 ? 8 : 0);
    bh[i] = b[row * 8 + group];
  }
  bx_u32 ra[4], rb[2];
  for (int r = 0; r < 4; ++r) ra[r] = (bx_u32)ah[2 * r] | ((bx_u32)ah[2 * r + 1] << 16);
  for (int r = 0; r < 2; ++r) rb[r] = (bx_u32)bh[2 * r] | ((bx_u32)bh[2 * r + 1] << 16);
  float c[4] = {0, 0, 0, 0};
  bx_mma_16816<BF16>(c, ra, rb);
  for (int i = 0; i < 4; ++i)  // ISA: row groupID (+8 for c2, c3); col tig*2 + (i&1)
    d[(group + (i >= 2 ? 8 : 0)) * 8 + tig * 2 + (i & 1)] = c[i];
}
BX_KERNEL void mma16816_f16(const bx_u16* a, const bx_u16* b, float* d) { mma16816<false>(a, b, d); }
BX_KERNEL void mma16816_bf16(const bx_u16* a, const bx_u16* b, float* d) { mma16816<true>(a, b, d); }

// m8n8k4 per quad-pair q (lanes 4q..4q+3, 4q+16..4q+19): a[q] 8 x 4 row-major, b[q] 4 x 8 row-major,
// d[q] 8 x 8.
BX_KERNEL void mma884(const bx_u16* a, const bx_u16* b, float* d) {
  const int lane = bx_tid_x(), q = (lane >> 2) & 3, high = lane >= 16;
  const bx_u16* aq = a + q * 32;
  const bx_u16* bq = b + q * 32;
  const int row = (lane % 4) + (high ? 4 : 0);  // ISA: A row (and B column) %laneid % 4, +4 for lanes >= 16
  bx_u32 ra[2], rb[2];
  for (int r = 0; r < 2; ++r) {
    ra[r] = (bx_u32)aq[row * 4 + 2 * r] | ((bx_u32)aq[row * 4 + 2 * r + 1] << 16);
    rb[r] = (bx_u32)bq[(2 * r) * 8 + row] | ((bx_u32)bq[(2 * r + 1) * 8 + row] << 16);
  }
  float c[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  bx_mma_884(c, ra, rb);
  for (int i = 0; i < 8; ++i) {  // ISA (f32 accumulators): row X (+4 for lanes >= 16), X = (lane & 1) + (i & 2);
    const int r = (lane & 1) + (i & 2) + (high ? 4 : 0), col = (i & 4) + (lane & 2) + (i & 1);  // col as written
    d[q * 64 + r * 8 + col] = c[i];
  }
}

// ldmatrix .x4 from four 8 x 8 matrices in shared memory (matrix j at rows 8j..8j+7 of a 32 x 8
// tile); out[lane * 4 + j] = register j of `lane`.
template <bool TRANS>
void ldmatrix(const bx_u16* m, bx_u32* out) {
  BX_SHARED(bx_u16, tile, 32 * 8);
  const int lane = bx_tid_x();
  for (int i = lane; i < 256; i += 32) tile[i] = m[i];
  bx_sync();
  bx_u32 r[4];
  bx_ldmatrix_x4<TRANS>(r, tile + lane * 8);  // lane l: row l % 8 of matrix l / 8
  for (int j = 0; j < 4; ++j) out[lane * 4 + j] = r[j];
}
BX_KERNEL void ldmatrix_plain(const bx_u16* m, bx_u32* out) { ldmatrix<false>(m, out); }
BX_KERNEL void ldmatrix_trans(const bx_u16* m, bx_u32* out) { ldmatrix<true>(m, out); }

// m16n8k8 with TF32 inputs: a (16 x 8) and b (8 x 8) row-major floats, each rounded by
// bx_tf32_bits; d (16 x 8). One warp.
BX_KERNEL void mma1688_tf32(const float* a, const float* b, float* d) {
  const int lane = bx_tid_x(), group = lane >> 2, tig = lane & 3;
  bx_u32 ra[4], rb[2];
  for (int i = 0; i < 4; ++i)  // ISA: row groupID (+8 for a1, a3); col threadID_in_group (+4 for a2, a3)
    ra[i] = bx_tf32_bits(a[(group + (i & 1) * 8) * 8 + tig + (i >> 1) * 4]);
  for (int i = 0; i < 2; ++i)  // ISA: row threadID_in_group (+4 for b1); col groupID
    rb[i] = bx_tf32_bits(b[(tig + i * 4) * 8 + group]);
  float c[4] = {0, 0, 0, 0};
  bx_mma_1688_tf32(c, ra, rb);
  for (int i = 0; i < 4; ++i)  // ISA: row groupID (+8 for c2, c3); col tig*2 + (i&1)
    d[(group + (i >= 2 ? 8 : 0)) * 8 + tig * 2 + (i & 1)] = c[i];
}

// bx_tf32_bits of n floats, by one warp.
BX_KERNEL void to_tf32(const float* in, bx_u32* out, int n) {
  for (int i = bx_tid_x(); i < n; i += 32) out[i] = bx_tf32_bits(in[i]);
}

// Planted faults a GPU would take (an access not aligned to its size, an ldmatrix row or a
// cp.async destination outside shared memory), which x86 would run without a word; `which`
// selects one, 0 none.
BX_KERNEL void faults(const float* in, bx_u32* out, int which) {
  BX_SHARED(bx_u16, tile, 32 * 8 + 8);
  BX_SHARED(float, staged, 64);
  const int lane = bx_tid_x();
  for (int i = lane; i < 32 * 8 + 8; i += 32) tile[i] = (bx_u16)i;
  bx_sync();
  bx_u32 r[4] = {0, 0, 0, 0};
  if (which == 0) bx_ldmatrix_x4<false>(r, tile + lane * 8);      // rows 16-byte aligned in shared
  if (which == 1) bx_ldmatrix_x4<false>(r, tile + lane * 8 + 1);  // 2 bytes off
  if (which == 2) bx_ldmatrix_x4<false>(r, (const bx_u16*)in + lane * 8);  // global memory
  if (which == 3) bx_cp_async<16>(staged + 4 * (lane & 15), in + 4 * (lane & 15) + 1, true);  // source 4 bytes off
  if (which == 4) bx_cp_async<8>(staged + 2 * lane + 1, in + 2 * lane, true);                // destination 4 bytes off
  if (which == 5) bx_cp_async<4>((float*)in + lane, in + lane, true);                        // destination in global
  if (which == 6) {
    float v[4];
    bx_ldv<4>(in, 1, v);  // a 16-byte vector load at element 1
  }
  bx_cp_async_commit();
  bx_cp_async_wait<0>();
  for (int j = 0; j < 4; ++j) out[lane * 4 + j] = r[j];
}

// cp.async: what shared memory holds before the wait (out[0..31]) and after it (out[32..63]).
BX_KERNEL void copy_async(const float* in, float* out) {
  BX_SHARED(float, tile, 32);
  const int t = bx_tid_x();
  bx_cp_async<4>(tile + t, in + t, true);
  bx_cp_async_commit();
  out[t] = tile[t];
  bx_cp_async_wait<0>();
  out[32 + t] = tile[t];
}
)";

class HostMatrix : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    emulator = new HostEmulator;
    // The kernels above have no host entries of their own: add them.
    std::string source = kKernels;
    for (const char* k : {"mma16816_f16", "mma16816_bf16", "mma884", "ldmatrix_plain", "ldmatrix_trans"})
      source += std::string("extern \"C\" void ") + k + "__entry(void** a) { " + k +
                "((const bx_u16*)a[0], (" + (std::string(k).rfind("ld", 0) == 0 ? "bx_u32" : "const bx_u16") +
                "*)a[1]" + (std::string(k).rfind("ld", 0) == 0 ? "" : ", (float*)a[2]") + "); }\n";
    source += "extern \"C\" void copy_async__entry(void** a) { copy_async((const float*)a[0], (float*)a[1]); }\n";
    source += "extern \"C\" void mma1688_tf32__entry(void** a) { mma1688_tf32((const float*)a[0], (const float*)a[1], "
              "(float*)a[2]); }\n";
    source += "extern \"C\" void faults__entry(void** a) { faults((const float*)a[0], (bx_u32*)a[1], *(int*)a[2]); }\n";
    source += "extern \"C\" void to_tf32__entry(void** a) { to_tf32((const float*)a[0], (bx_u32*)a[1], *(int*)a[2]); }\n";
    library = new HostKernelLibrary(compile_for_host(source, BERTC_TEST_CACHE, emulator->api()));
  }
  static void TearDownTestSuite() {
    delete library;
    delete emulator;
  }
  void launch(const char* kernel, std::vector<void*> args, ThreadOrder order) {
    emulator->launch(kernel, library->entry(kernel), args.data(), {{1}, {32}, true, order});
  }
  static HostEmulator* emulator;
  static HostKernelLibrary* library;
};
HostEmulator* HostMatrix::emulator = nullptr;
HostKernelLibrary* HostMatrix::library = nullptr;

// Small integers (exact in f16 and bf16, and their products' sums exact in f32).
uint16_t f16_bits(int v) {
  _Float16 h = static_cast<_Float16>(v);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
uint16_t bf16_bits(int v) {
  const float f = static_cast<float>(v);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>(u >> 16);
}
int value_at(int i, int salt) { return (i * 7 + salt) % 9 - 4; }

TEST_F(HostMatrix, Mma16816FollowsTheIsaFragments) {
  for (bool bf16 : {false, true})
    for (ThreadOrder order : {ThreadOrder::Forward, ThreadOrder::Reverse}) {
      std::vector<uint16_t> a(256), b(128);
      for (int i = 0; i < 256; ++i) a[i] = bf16 ? bf16_bits(value_at(i, 1)) : f16_bits(value_at(i, 1));
      for (int i = 0; i < 128; ++i) b[i] = bf16 ? bf16_bits(value_at(i, 5)) : f16_bits(value_at(i, 5));
      std::vector<float> d(128, std::nanf(""));
      launch(bf16 ? "mma16816_bf16" : "mma16816_f16", {a.data(), b.data(), d.data()}, order);
      for (int r = 0; r < 16; ++r)
        for (int c = 0; c < 8; ++c) {
          int want = 0;
          for (int k = 0; k < 16; ++k) want += value_at(r * 16 + k, 1) * value_at(k * 8 + c, 5);
          ASSERT_EQ(d[r * 8 + c], static_cast<float>(want)) << (bf16 ? "bf16" : "f16") << " d[" << r << "][" << c << "]";
        }
    }
}

// TF32: inputs that are not TF32 values (small integers times 1 + 0.75 * 2^-10: rounding to nearest
// and truncating differ by an ulp, 2^-10 relative, for 1, 2 and 4) are rounded as cvt.rna does,
// then multiplied exactly (11-bit significands) and summed in f32: against a double sum of
// ir::round_to_tf32's values only the 8 f32 additions differ, each by at most 2^-24 of the sum of
// magnitudes, where truncated inputs would be off by about 2^-10 of it.
TEST_F(HostMatrix, Mma1688Tf32FollowsTheIsaFragmentsAndRoundsItsInputs) {
  auto input = [](int i, int salt) { return static_cast<float>(value_at(i, salt)) * (1.0f + 0.75f / 1024.0f); };
  std::vector<float> a(128), b(64);
  for (int i = 0; i < 128; ++i) a[i] = input(i, 1);
  for (int i = 0; i < 64; ++i) b[i] = input(i, 5);
  for (ThreadOrder order : {ThreadOrder::Forward, ThreadOrder::Reverse}) {
    std::vector<float> d(128, std::nanf(""));
    launch("mma1688_tf32", {a.data(), b.data(), d.data()}, order);
    for (int r = 0; r < 16; ++r)
      for (int c = 0; c < 8; ++c) {
        double want = 0, magnitude = 0;
        for (int k = 0; k < 8; ++k) {
          const double term = static_cast<double>(ir::round_to_tf32(a[r * 8 + k])) * ir::round_to_tf32(b[k * 8 + c]);
          want += term;
          magnitude += std::abs(term);
        }
        ASSERT_NEAR(d[r * 8 + c], want, 8 * std::ldexp(magnitude, -24)) << "d[" << r << "][" << c << "]";
      }
  }
}

// The prelude's TF32 rounding is bit for bit ir::round_to_tf32 (which the host cuBLAS product
// uses), and that is cvt.rna's: ties away from zero, NaN kept, overflow to infinity.
TEST_F(HostMatrix, Tf32RoundingIsCvtRna) {
  auto bits = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  };
  auto value = [](uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  EXPECT_EQ(bits(ir::round_to_tf32(value(0x3f800fffu))), 0x3f800000u);  // below half: down
  EXPECT_EQ(bits(ir::round_to_tf32(value(0x3f801000u))), 0x3f802000u);  // a tie: away from zero
  EXPECT_EQ(bits(ir::round_to_tf32(value(0xbf801000u))), 0xbf802000u);  // a negative tie: away from zero
  EXPECT_EQ(bits(ir::round_to_tf32(value(0x3f803000u))), 0x3f804000u);  // odd kept bit, a tie: still away
  EXPECT_EQ(bits(ir::round_to_tf32(value(0x7f7ff000u))), 0x7f800000u);  // past the largest TF32: infinity
  EXPECT_EQ(bits(ir::round_to_tf32(value(0x7f800000u))), 0x7f800000u);
  EXPECT_TRUE(std::isnan(ir::round_to_tf32(value(0x7f800001u))));  // a NaN whose payload is all dropped bits
  std::vector<float> in(4096);
  uint32_t x = 12345;
  for (float& f : in) {
    x = x * 1664525u + 1013904223u;
    f = value(x);
  }
  in[0] = value(0x7f800001u), in[1] = value(0x3f801000u), in[2] = value(0x00001000u);  // NaN, tie, subnormal tie
  std::vector<uint32_t> out(in.size());
  int n = static_cast<int>(in.size());
  launch("to_tf32", {in.data(), out.data(), &n}, ThreadOrder::Forward);
  for (size_t i = 0; i < in.size(); ++i) {
    const float want = ir::round_to_tf32(in[i]);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(value(out[i]))) << i;
    } else {
      ASSERT_EQ(out[i], bits(want)) << "input bits " << std::hex << bits(in[i]);
    }
  }
}

TEST_F(HostMatrix, Mma884FollowsTheIsaFragmentsPerQuadPair) {
  std::vector<uint16_t> a(128), b(128);
  for (int i = 0; i < 128; ++i) a[i] = f16_bits(value_at(i, 2)), b[i] = f16_bits(value_at(i, 3));
  std::vector<float> d(256, std::nanf(""));
  launch("mma884", {a.data(), b.data(), d.data()}, ThreadOrder::Reverse);
  for (int q = 0; q < 4; ++q)
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c) {
        int want = 0;
        for (int k = 0; k < 4; ++k) want += value_at(q * 32 + r * 4 + k, 2) * value_at(q * 32 + k * 8 + c, 3);
        ASSERT_EQ(d[q * 64 + r * 8 + c], static_cast<float>(want)) << "quad-pair " << q << " d[" << r << "][" << c << "]";
      }
}

TEST_F(HostMatrix, LdmatrixGivesEachLaneItsRowOrColumnPair) {
  std::vector<uint16_t> m(256);
  for (int i = 0; i < 256; ++i) m[i] = static_cast<uint16_t>(i);  // element (matrix j, row r, col c) = 64j + 8r + c
  for (bool trans : {false, true}) {
    std::vector<uint32_t> out(128, 0);
    launch(trans ? "ldmatrix_trans" : "ldmatrix_plain", {m.data(), out.data()}, ThreadOrder::Forward);
    for (int lane = 0; lane < 32; ++lane)
      for (int j = 0; j < 4; ++j) {
        // ISA: lane l holds row l/4, columns 2(l%4) and 2(l%4)+1; .trans: of the transposed matrix.
        const int g = lane / 4, t = lane % 4;
        const uint32_t lo = trans ? 64 * j + 8 * (2 * t) + g : 64 * j + 8 * g + 2 * t;
        const uint32_t hi = trans ? 64 * j + 8 * (2 * t + 1) + g : 64 * j + 8 * g + 2 * t + 1;
        ASSERT_EQ(out[lane * 4 + j], lo | (hi << 16)) << (trans ? "trans " : "") << "lane " << lane << " register " << j;
      }
  }
}

TEST_F(HostMatrix, CpAsyncLandsOnlyAtTheWait) {
  std::vector<float> in(32), out(64, 0);
  for (int i = 0; i < 32; ++i) in[i] = static_cast<float>(i);
  launch("copy_async", {in.data(), out.data()}, ThreadOrder::Forward);
  for (int i = 0; i < 32; ++i) {
    EXPECT_TRUE(std::isnan(out[i])) << "shared memory changed before the wait";
    EXPECT_EQ(out[32 + i], in[i]);
  }
}

// Each planted fault ends the launch with an error naming it, where x86 alone would run on (the
// unfaulting variant runs).
TEST_F(HostMatrix, WhatAGpuFaultsOnFailsTheLaunch) {
  alignas(256) static float in[1024];
  std::vector<uint32_t> out(128);
  int which = 0;
  launch("faults", {in, out.data(), &which}, ThreadOrder::Forward);
  const std::pair<int, const char*> planted[] = {
      {1, "an ldmatrix row (8 b16 elements) at address"},
      {2, "an ldmatrix row (8 b16 elements) at address"},
      {3, "a cp.async source at address"},
      {4, "a cp.async destination at address"},
      {5, "a cp.async destination at address"},
      {6, "a vector access at address"},
  };
  for (const auto& [fault, said] : planted) {
    which = fault;
    try {
      launch("faults", {in, out.data(), &which}, ThreadOrder::Forward);
      ADD_FAILURE() << "planted fault " << fault << " ran";
    } catch (const EmulationError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(said), std::string::npos) << fault << ": " << what;
      const bool outside = fault == 2 || fault == 5;
      EXPECT_NE(what.find(outside ? "is not inside the block's shared memory" : "-byte aligned: a GPU faults on it"),
                std::string::npos) << fault << ": " << what;
    }
  }
}

}  // namespace
}  // namespace bertc::codegen
