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
  // Every lane of the warp passes `bytes` (at most 64); all lanes get the 32 lanes' bytes, in
  // lane order, in `all`: what mma.sync and ldmatrix exchange among a warp's registers.
  void (*warp_gather)(void* scheduler, const void* mine, unsigned int bytes, void* all);
  // cp.async: the copy of `bytes` from src (zeros when src is null) lands at dst only when a
  // wait_group leaves its group behind, so a kernel that reads before waiting sees stale data.
  void (*cp_async)(void* scheduler, void* dst, const void* src, unsigned int bytes);
  void (*cp_async_commit)(void* scheduler);
  void (*cp_async_wait)(void* scheduler, int pending_groups);
  // What a GPU faults on (PTX ISA, "Addresses as Operands": an access is aligned to its size) and
  // the emulation would not: `address` of an access of `alignment` bytes is misaligned. Ends the
  // launch with an error naming `what`.
  void (*misaligned)(void* scheduler, const char* what, const void* address, unsigned long alignment);
  // ldmatrix's row addresses: `bytes` at `address` must be aligned to `bytes` and inside one of the
  // block's shared arrays (a generic address outside .shared is undefined behaviour); else as
  // misaligned.
  void (*check_shared)(void* scheduler, const char* what, const void* address, unsigned long bytes);
};

#endif  // BX_HOST_ABI_H
