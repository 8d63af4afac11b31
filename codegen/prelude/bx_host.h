// The prelude on the host: the same API, served by the fiber scheduler of
// codegen/host_emulation through a table of functions the loader installs (bx_api). Blocks run
// one after another, a block's threads as fibers on one OS thread, so a barrier, a warp shuffle
// and per-block shared memory behave as on the GPU; atomics are plain read-modify-writes.
#ifndef BX_HOST_H
#define BX_HOST_H

#include <cmath>
#include <cstring>

#define BERTC_HD
#define BX_FN static inline
#define BX_MEMBER inline         // member functions
#define BX_STATIC static inline  // static member functions
#define BX_KERNEL extern "C"
#define BX_LAUNCH_BOUNDS(threads, blocks)  // register limits are the GPU's
#define BX_UNROLL                  // the host compiler decides
#define BX_ROLLED
#define BX_HOST 1

#include "bx_host_abi.h"

extern "C" bx_host_api* bx_api;  // defined once per kernel library (BX_HOST_LIBRARY)
#ifdef BX_HOST_LIBRARY
extern "C" {
bx_host_api* bx_api = nullptr;
void bx_install(bx_host_api* api) { bx_api = api; }
}
#endif

#define BX_CONSTANT static const
// A misaligned vector access works on x86 but faults on the GPU: make it fail the launch here too,
// naming the address, so the emulation in CI finds it.
#define BX_CHECK_ALIGNED(p, bytes) \
  if (reinterpret_cast<unsigned long>(p) % (bytes) != 0) bx_api->misaligned(bx_api->scheduler, "a vector access", p, bytes)
#define BX_SHARED(type, name, count) type* name = static_cast<type*>(bx_api->shared(bx_api->scheduler, sizeof(type) * (count), __LINE__))

BX_FN int bx_tid_x() { return bx_api->current->tid[0]; }
BX_FN int bx_tid_y() { return bx_api->current->tid[1]; }
BX_FN int bx_bid_x() { return bx_api->current->bid[0]; }
BX_FN int bx_bid_y() { return bx_api->current->bid[1]; }
BX_FN int bx_bid_z() { return bx_api->current->bid[2]; }
BX_FN int bx_bdim_x() { return bx_api->current->bdim[0]; }
BX_FN int bx_bdim_y() { return bx_api->current->bdim[1]; }
BX_FN int bx_gdim_x() { return bx_api->current->gdim[0]; }
BX_FN void bx_sync() { bx_api->sync(bx_api->scheduler); }
BX_FN void bx_threadfence() {}

BX_FN unsigned int bx_float_bits(float f) {
  unsigned int u;
  std::memcpy(&u, &f, 4);
  return u;
}
BX_FN float bx_bits_float(unsigned int u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

BX_FN float bx_shfl_xor(float v, int lane_mask) {
  return bx_bits_float(bx_api->shfl_xor(bx_api->scheduler, bx_float_bits(v), lane_mask));
}
// The warp's barrier: a shuffle of nothing, since every lane waits for the others in one.
BX_FN void bx_syncwarp() { (void)bx_api->shfl_xor(bx_api->scheduler, 0u, 0); }

// Fibers switch only at barriers and shuffles, so a read-modify-write is atomic here.
BX_FN float bx_atomic_add(float* p, float v) {
  const float old = *p;
  *p = old + v;
  return old;
}
BX_FN unsigned int bx_atomic_inc(unsigned int* p) { return (*p)++; }
BX_FN unsigned int bx_atomic_cas(unsigned int* p, unsigned int expected, unsigned int desired) {
  const unsigned int old = *p;
  if (old == expected) *p = desired;
  return old;
}
BX_FN float bx_volatile_load(const float* p) { return *p; }

BX_FN float bx_exp(float x) { return std::exp(x); }
BX_FN float bx_expm1(float x) { return std::expm1(x); }
BX_FN float bx_log(float x) { return std::log(x); }
BX_FN float bx_sqrt(float x) { return std::sqrt(x); }
BX_FN float bx_rsqrt(float x) { return 1.0f / std::sqrt(x); }
BX_FN float bx_tanh(float x) { return std::tanh(x); }
BX_FN float bx_erf(float x) { return std::erf(x); }
BX_FN bool bx_isfinite(float x) { return std::isfinite(x); }
BX_FN float bx_fmax(float a, float b) { return std::fmax(a, b); }
BX_FN float bx_fmin(float a, float b) { return std::fmin(a, b); }

#endif  // BX_HOST_H
