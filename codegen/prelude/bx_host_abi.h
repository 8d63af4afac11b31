// The table through which host-compiled kernels (bx_host.h) reach the fiber scheduler of
// codegen/host_emulation: plain C, so a kernel library and bertc agree on it whatever compiled them.
#ifndef BX_HOST_ABI_H
#define BX_HOST_ABI_H

struct bx_thread_state {  // the running thread's coordinates; the scheduler points `current` at it
  int tid[3], bid[3], bdim[3], gdim[3];
};

struct bx_host_api {
  const bx_thread_state* current;
  void* scheduler;
  void (*sync)(void* scheduler);                                          // __syncthreads
  unsigned int (*shfl_xor)(void* scheduler, unsigned int bits, int lane_mask);
  void* (*shared)(void* scheduler, unsigned long bytes, int key);         // per block, poisoned
};

#endif  // BX_HOST_ABI_H
