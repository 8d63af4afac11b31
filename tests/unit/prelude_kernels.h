// Hand-written kernels over the prelude (with host entries under BX_HOST), shared by the host
// emulation and NVRTC tests: the same text must run on the host and compile for every GPU.
#pragma once

namespace bertc::testing {

inline const char* kPreludeKernels = R"(
#include "bx.h"

// out[block] = sum over the block's threads of (tid + 1000 * block), by warp shuffles and shared memory.
BX_KERNEL void block_sums(float* out) {
  BX_SHARED(float, scratch, 32);
  const float s = bx_block_sum((float)(bx_tid_x() + 1000 * bx_bid_x()), scratch);
  if (bx_tid_x() == 0) out[bx_bid_x()] = s;
}
BX_KERNEL void block_maxes(const float* in, float* out) {
  BX_SHARED(float, scratch, 32);
  const float m = bx_block_max(in[bx_bid_x() * bx_bdim_x() + bx_tid_x()], scratch);
  if (bx_tid_x() == 0) out[bx_bid_x()] = m;
}
// Reverses each block's slice through shared memory; `barrier` selects the right or broken version.
BX_KERNEL void reverse(const float* in, float* out, const int* barrier) {
  BX_SHARED(float, tile, 256);
  const int t = bx_tid_x(), n = bx_bdim_x(), base = bx_bid_x() * n;
  tile[t] = in[base + t];
  if (*barrier) bx_sync();
  out[base + t] = tile[n - 1 - t];
}
// Only half of the threads reach the barrier: a deadlock on a GPU.
BX_KERNEL void divergent(float* out) {
  if (bx_tid_x() < 16) bx_sync();
  out[bx_tid_x()] = 1.0f;
}
BX_KERNEL void round_both(const float* in, float* f16, float* bf16) {
  const int i = bx_bid_x() * bx_bdim_x() + bx_tid_x();
  f16[i] = bx_round_f16(in[i]);
  bf16[i] = bx_round_bf16(in[i]);
}
BX_KERNEL void keep_mask(const bx_i64* seed, float* out) {
  const int i = bx_bid_x() * bx_bdim_x() + bx_tid_x();
  out[i] = bx_dropout_keep(*seed, 7, i, 1677722u) ? 1.0f : 0.0f;  // threshold ceil(0.1 * 2^24)
}
BX_KERNEL void add_16(bx_f16* h, bx_bf16* b) {
  bx_atomic_add_st(h, bx_tid_x() & 3, 0.5f);
  bx_atomic_add_st(b, bx_tid_x() & 3, 0.5f);
}
// Each block adds in[block] into sum[0] atomically (in float: the total depends on the order) and
// notes when it ran: order[k] is the block that ran k-th (one thread a block).
BX_KERNEL void atomic_total(const float* in, float* sum, unsigned int* count, int* order) {
  bx_atomic_add(sum, in[bx_bid_x()]);
  order[bx_atomic_inc(count)] = bx_bid_x();
}

#ifdef BX_HOST
extern "C" void block_sums__entry(void** a) { block_sums((float*)a[0]); }
extern "C" void block_maxes__entry(void** a) { block_maxes((const float*)a[0], (float*)a[1]); }
extern "C" void reverse__entry(void** a) { reverse((const float*)a[0], (float*)a[1], (const int*)a[2]); }
extern "C" void divergent__entry(void** a) { divergent((float*)a[0]); }
extern "C" void round_both__entry(void** a) { round_both((const float*)a[0], (float*)a[1], (float*)a[2]); }
extern "C" void keep_mask__entry(void** a) { keep_mask((const bx_i64*)a[0], (float*)a[1]); }
extern "C" void add_16__entry(void** a) { add_16((bx_f16*)a[0], (bx_bf16*)a[1]); }
extern "C" void atomic_total__entry(void** a) {
  atomic_total((const float*)a[0], (float*)a[1], (unsigned int*)a[2], (int*)a[3]);
}
#endif
)";

inline const char* kPreludeKernelNames[] = {"block_sums", "block_maxes", "reverse", "divergent",
                                            "round_both", "keep_mask",  "add_16", "atomic_total"};

}  // namespace bertc::testing
