// The prelude's shared part, the same text on GPU and host: integer types, 16-bit float storage
// (round to nearest even, bit-exact with the reference executor; fp16's conversions are the GPU's
// own instruction there, bx_device.h), typed loads and stores,
// Philox dropout (ir/philox_core.h), warp and block reductions, and the scalar formulas of ops.
#ifndef BX_COMMON_H
#define BX_COMMON_H

typedef long long bx_i64;
typedef unsigned long long bx_u64;
typedef unsigned int bx_u32;
typedef unsigned short bx_u16;

#include "philox_core.h"

BX_FN float bx_inf() { return bx_bits_float(0x7f800000u); }

struct bx_f16 {
  bx_u16 bits;
};
struct bx_bf16 {
  bx_u16 bits;
};

#ifdef BX_NATIVE_F16_CONVERSIONS  // (the GPU's: one cvt each way, bx_device.h)
BX_FN bx_u16 bx_f32_to_f16_bits(float f) { return bx_native_f32_to_f16_bits(f); }
BX_FN float bx_f16_bits_to_f32(bx_u16 h) { return bx_native_f16_bits_to_f32(h); }
#else
// float -> IEEE half, round to nearest even; overflow to inf, subnormals kept.
BX_FN bx_u16 bx_f32_to_f16_bits(float f) {
  const bx_u32 x = bx_float_bits(f);
  const bx_u32 sign = (x >> 16) & 0x8000u, exp = (x >> 23) & 0xffu;
  bx_u32 mant = x & 0x7fffffu;
  if (exp == 0xffu) return (bx_u16)(sign | 0x7c00u | (mant ? 0x200u : 0u));
  const int e = (int)exp - 112;  // rebias 127 -> 15
  if (e >= 0x1f) return (bx_u16)(sign | 0x7c00u);
  if (e <= 0) {  // a half subnormal (or zero): mantissa with its implicit bit, shifted right
    if (e < -10) return (bx_u16)sign;
    mant |= 0x800000u;
    const int shift = 14 - e;
    bx_u32 h = mant >> shift;
    const bx_u32 rest = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rest > half || (rest == half && (h & 1u))) ++h;
    return (bx_u16)(sign | h);
  }
  bx_u32 h = sign | ((bx_u32)e << 10) | (mant >> 13);
  const bx_u32 rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is right
  return (bx_u16)h;
}

BX_FN float bx_f16_bits_to_f32(bx_u16 h) {
  const bx_u32 sign = (bx_u32)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0x1fu) return bx_bits_float(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {  // subnormal: mant * 2^-24, exact in float
    const float v = (float)mant * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  return bx_bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}
#endif

BX_FN bx_u16 bx_f32_to_bf16_bits(float f) {
  bx_u32 x = bx_float_bits(f);
  if ((x & 0x7f800000u) != 0x7f800000u) x += 0x7fffu + ((x >> 16) & 1u);  // inf and nan as they are
  return (bx_u16)(x >> 16);
}
BX_FN float bx_bf16_bits_to_f32(bx_u16 b) { return bx_bits_float((bx_u32)b << 16); }

// A float rounded as a 16-bit storage dtype keeps it: what the IR's f16/bf16 values hold.
BX_FN float bx_round_f16(float x) { return bx_f16_bits_to_f32(bx_f32_to_f16_bits(x)); }
BX_FN float bx_round_bf16(float x) { return bx_bf16_bits_to_f32(bx_f32_to_bf16_bits(x)); }

// Typed element access by index; arithmetic is always in float (or 64-bit integers).
BX_FN float bx_ld(const float* p, bx_i64 i) { return p[i]; }
BX_FN float bx_ld(const bx_f16* p, bx_i64 i) { return bx_f16_bits_to_f32(p[i].bits); }
BX_FN float bx_ld(const bx_bf16* p, bx_i64 i) { return bx_bf16_bits_to_f32(p[i].bits); }
BX_FN bx_i64 bx_ld(const int* p, bx_i64 i) { return p[i]; }
BX_FN bx_i64 bx_ld(const bx_i64* p, bx_i64 i) { return p[i]; }
BX_FN bx_i64 bx_ld(const unsigned char* p, bx_i64 i) { return p[i]; }
BX_FN void bx_st(float* p, bx_i64 i, float v) { p[i] = v; }
BX_FN void bx_st(bx_f16* p, bx_i64 i, float v) { p[i].bits = bx_f32_to_f16_bits(v); }
BX_FN void bx_st(bx_bf16* p, bx_i64 i, float v) { p[i].bits = bx_f32_to_bf16_bits(v); }
BX_FN void bx_st(int* p, bx_i64 i, bx_i64 v) { p[i] = (int)v; }
BX_FN void bx_st(bx_i64* p, bx_i64 i, bx_i64 v) { p[i] = v; }
BX_FN void bx_st(unsigned char* p, bx_i64 i, bx_i64 v) { p[i] = (unsigned char)v; }

// Vector access to N consecutive elements starting at i (a multiple of N): one load or store of
// N * sizeof(T) bytes where the buffer is aligned to it, as kernel buffers are (256 bytes).
template <typename T, int N>
struct alignas(sizeof(T) * N) bx_vec {
  T v[N];
};
template <int N> BX_FN void bx_ldv(const float* p, bx_i64 i, float* out) {
  BX_CHECK_ALIGNED(p + i, sizeof(bx_vec<float, N>));
  const bx_vec<float, N> x = *(const bx_vec<float, N>*)(p + i);
  for (int k = 0; k < N; ++k) out[k] = x.v[k];
}
template <int N> BX_FN void bx_ldv(const bx_f16* p, bx_i64 i, float* out) {
  BX_CHECK_ALIGNED(p + i, sizeof(bx_vec<bx_u16, N>));
  const bx_vec<bx_u16, N> x = *(const bx_vec<bx_u16, N>*)(p + i);
  for (int k = 0; k < N; ++k) out[k] = bx_f16_bits_to_f32(x.v[k]);
}
template <int N> BX_FN void bx_ldv(const bx_bf16* p, bx_i64 i, float* out) {
  BX_CHECK_ALIGNED(p + i, sizeof(bx_vec<bx_u16, N>));
  const bx_vec<bx_u16, N> x = *(const bx_vec<bx_u16, N>*)(p + i);
  for (int k = 0; k < N; ++k) out[k] = bx_bf16_bits_to_f32(x.v[k]);
}
template <int N> BX_FN void bx_stv(float* p, bx_i64 i, const float* in) {
  BX_CHECK_ALIGNED(p + i, sizeof(bx_vec<float, N>));
  bx_vec<float, N> x;
  for (int k = 0; k < N; ++k) x.v[k] = in[k];
  *(bx_vec<float, N>*)(p + i) = x;
}
template <int N> BX_FN void bx_stv(bx_f16* p, bx_i64 i, const float* in) {
  BX_CHECK_ALIGNED(p + i, sizeof(bx_vec<bx_u16, N>));
  bx_vec<bx_u16, N> x;
  for (int k = 0; k < N; ++k) x.v[k] = bx_f32_to_f16_bits(in[k]);
  *(bx_vec<bx_u16, N>*)(p + i) = x;
}
template <int N> BX_FN void bx_stv(bx_bf16* p, bx_i64 i, const float* in) {
  BX_CHECK_ALIGNED(p + i, sizeof(bx_vec<bx_u16, N>));
  bx_vec<bx_u16, N> x;
  for (int k = 0; k < N; ++k) x.v[k] = bx_f32_to_bf16_bits(in[k]);
  *(bx_vec<bx_u16, N>*)(p + i) = x;
}

// Atomic adds for every float storage type; 16-bit ones through a compare-and-swap of the
// 32-bit word that holds them (any arch).
BX_FN void bx_atomic_add_st(float* p, bx_i64 i, float v) { bx_atomic_add(p + i, v); }
BX_FN void bx_atomic_add_16(bx_u16* p, float v, bool bf16) {
  bx_u32* word = (bx_u32*)((char*)p - (((bx_u64)p) & 2u));
  const bool high = (((bx_u64)p) & 2u) != 0;
  bx_u32 old = *word, assumed;
  do {
    assumed = old;
    const bx_u16 cur = high ? (bx_u16)(assumed >> 16) : (bx_u16)(assumed & 0xffffu);
    const float sum = (bf16 ? bx_bf16_bits_to_f32(cur) : bx_f16_bits_to_f32(cur)) + v;
    const bx_u32 next16 = bf16 ? bx_f32_to_bf16_bits(sum) : bx_f32_to_f16_bits(sum);
    const bx_u32 next = high ? ((assumed & 0xffffu) | (next16 << 16)) : ((assumed & 0xffff0000u) | next16);
    old = bx_atomic_cas(word, assumed, next);
  } while (old != assumed);
}
BX_FN void bx_atomic_add_st(bx_f16* p, bx_i64 i, float v) { bx_atomic_add_16(&p[i].bits, v, false); }
BX_FN void bx_atomic_add_st(bx_bf16* p, bx_i64 i, float v) { bx_atomic_add_16(&p[i].bits, v, true); }

// The key argsort orders gather indices by and scatter_add finds its runs by: the batch of
// position `at` (of `per_batch` positions a batch), then its index clamped into [0, rows).
BX_FN bx_i64 bx_gather_key(bx_i64 at, bx_i64 index, bx_i64 per_batch, bx_i64 rows) {
  return at / per_batch * rows + (index < 0 ? 0 : index >= rows ? rows - 1 : index);
}

// Dropout: keep element `index` when its Philox draw reaches the threshold ceil(p * 2^24).
BX_FN bool bx_dropout_keep(bx_i64 seed, bx_i64 offset, bx_i64 index, bx_u32 threshold) {
  return bertc_dropout_draw((bx_u64)seed, (bx_u64)offset, (bx_u64)index) >= threshold;
}

// Scalar formulas, as the reference executor computes them (in float here).
BX_FN float bx_gelu(float x) { return 0.5f * x * (1.0f + bx_erf(x * 0.70710678118654752f)); }
BX_FN float bx_gelu_grad(float dy, float x) {
  const float cdf = 0.5f * (1.0f + bx_erf(x * 0.70710678118654752f));
  const float pdf = 0.39894228040143268f * bx_exp(-0.5f * x * x);
  return dy * (cdf + x * pdf);
}

// Reductions over the 32 lanes of a warp (butterfly: every lane gets the result).
BX_FN float bx_warp_sum(float v) {
  for (int m = 16; m > 0; m >>= 1) v += bx_shfl_xor(v, m);
  return v;
}
BX_FN float bx_warp_max(float v) {
  for (int m = 16; m > 0; m >>= 1) v = bx_fmax(v, bx_shfl_xor(v, m));
  return v;
}

// Block-wide reductions for blocks of whole warps; `scratch` is shared memory of 32 floats. Every
// thread gets the result; the closing barrier lets the caller reuse `scratch` at once.
BX_FN float bx_block_sum(float v, float* scratch) {
  const int lane = bx_tid_x() & 31, warp = bx_tid_x() >> 5, warps = (bx_bdim_x() + 31) >> 5;
  v = bx_warp_sum(v);
  if (lane == 0) scratch[warp] = v;
  bx_sync();
  v = lane < warps ? scratch[lane] : 0.0f;
  v = bx_warp_sum(v);
  bx_sync();
  return v;
}
BX_FN float bx_block_max(float v, float* scratch) {
  const int lane = bx_tid_x() & 31, warp = bx_tid_x() >> 5, warps = (bx_bdim_x() + 31) >> 5;
  v = bx_warp_max(v);
  if (lane == 0) scratch[warp] = v;
  bx_sync();
  v = lane < warps ? scratch[lane] : -bx_inf();
  v = bx_warp_max(v);
  bx_sync();
  return v;
}

#endif  // BX_COMMON_H
