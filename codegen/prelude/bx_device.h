// The prelude on the GPU: indices, barriers, warp shuffles, atomics and bit casts over NVRTC's
// built-in device functions. Nothing here includes a header.
#ifndef BX_DEVICE_H
#define BX_DEVICE_H

#define BERTC_HD __host__ __device__
#define BX_FN __device__ __forceinline__
#define BX_MEMBER __device__ __forceinline__         // member functions
#define BX_STATIC __device__ __forceinline__ static  // static member functions
#define BX_KERNEL extern "C" __global__
// The block size a kernel is launched with: the compiler keeps its registers within what that
// many threads may use, so a kernel never fails to launch because its register count grew. One
// block per SM is all it asks for: with the block size alone, ptxas trades registers for
// occupancy (32 registers and a spill in the sm_70 multi-tensor optimizer kernel, NVRTC 12.9).
#define BX_LAUNCH_BOUNDS(threads, blocks) __launch_bounds__(threads, blocks)
// Before a loop over a register array (accumulators): unrolled, every index is a constant and
// the array stays in registers instead of local memory.
#define BX_UNROLL _Pragma("unroll")
// A loop kept rolled: its body's loads are not hoisted across iterations, which would hold
// several iterations' fragments in registers at once.
#define BX_ROLLED _Pragma("unroll 1")
// 16-byte aligned whatever the type: tiles are read and written 16 bytes at a time (vector loads,
// cp.async, ldmatrix), and a 2-byte type alone would only promise 2.
#define BX_SHARED(type, name, count) __shared__ __align__(16) type name[count]
#define BX_CHECK_ALIGNED(p, bytes)  // the GPU faults on a misaligned vector access by itself
#define BX_CONSTANT __constant__ const
// fp16 storage converted by one instruction each way (cvt, PTX ISA "cvt"): the bits of
// bx_common.h's formulas for every value but NaN's payload, where its dozens of integer
// instructions were 80% of an sm_61 fp32-fp16storage step's (the PTX emulator's counts).
#define BX_NATIVE_F16_CONVERSIONS 1
BX_FN unsigned short bx_native_f32_to_f16_bits(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
BX_FN float bx_native_f16_bits_to_f32(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}

BX_FN int bx_tid_x() { return threadIdx.x; }
BX_FN int bx_tid_y() { return threadIdx.y; }
BX_FN int bx_bid_x() { return blockIdx.x; }
BX_FN int bx_bid_y() { return blockIdx.y; }
BX_FN int bx_bid_z() { return blockIdx.z; }
BX_FN int bx_bdim_x() { return blockDim.x; }
BX_FN int bx_bdim_y() { return blockDim.y; }
BX_FN int bx_gdim_x() { return gridDim.x; }
BX_FN void bx_sync() { __syncthreads(); }
// The warp's barrier with memory ordering: a shuffle converges the lanes but orders no memory, so
// a shared location read by every lane and then written by one needs this between the two.
BX_FN void bx_syncwarp() { __syncwarp(); }
BX_FN void bx_threadfence() { __threadfence(); }

BX_FN float bx_shfl_xor(float v, int lane_mask) { return __shfl_xor_sync(0xffffffffu, v, lane_mask); }

BX_FN float bx_atomic_add(float* p, float v) { return atomicAdd(p, v); }
BX_FN unsigned int bx_atomic_inc(unsigned int* p) { return atomicAdd(p, 1u); }
BX_FN unsigned int bx_atomic_cas(unsigned int* p, unsigned int expected, unsigned int desired) {
  return atomicCAS(p, expected, desired);
}
// A read that sees other blocks' atomics (after their threadfence).
BX_FN float bx_volatile_load(const float* p) { return *(const volatile float*)p; }

BX_FN unsigned int bx_float_bits(float f) { return __float_as_uint(f); }
BX_FN float bx_bits_float(unsigned int u) { return __uint_as_float(u); }

BX_FN float bx_exp(float x) { return expf(x); }
BX_FN float bx_expm1(float x) { return expm1f(x); }
BX_FN float bx_log(float x) { return logf(x); }
BX_FN float bx_sqrt(float x) { return sqrtf(x); }
BX_FN float bx_rsqrt(float x) { return rsqrtf(x); }
BX_FN float bx_tanh(float x) { return tanhf(x); }
BX_FN float bx_erf(float x) { return erff(x); }
BX_FN bool bx_isfinite(float x) { return isfinite(x); }
BX_FN float bx_fmax(float a, float b) { return fmaxf(a, b); }
BX_FN float bx_fmin(float a, float b) { return fminf(a, b); }

#endif  // BX_DEVICE_H
