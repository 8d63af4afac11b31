// The emulated driver's exports beyond the CUDA driver API: the counts of what its kernels ran
// (bertcEmulatedTakeLaunchCounts, which bertc's CUDA device asks for profiles where a driver
// offers it), and how the emulated libraries (cuBLAS, NCCL) put their work on a stream — queued, or a kernel node of the capture's graph, as a real
// library's own kernels go — naming the device memory it reads and writes, so that the driver
// checks those accesses as its checkers check a PTX kernel's (inside an allocation; initcheck on
// what is read) and keeps the written state that later kernels' initcheck reads. A plain C ABI:
// the libraries find it with dlsym in the libcuda.so.1 the program loaded.
#pragma once

#include <cuda.h>
#include <dlfcn.h>

#include <cstddef>
#include <cstdint>

extern "C" {

// `count` pieces of `bytes` bytes, `stride` bytes apart from `base` (a column-major matrix: one
// piece a column).
struct bertcEmulatedAccess {
  uint64_t base;
  uint64_t bytes;
  uint64_t stride;
  uint64_t count;
  int writes;  // 0: read
};

// The kernel's work: 0 when done, else non-zero with why written to `why` (a finding: the driver
// says it and fails every call after, as after a device fault).
typedef int (*bertcEmulatedRun)(void* data, char* why, size_t why_bytes);

// Issues `run(data)` on `stream` as kernel `what`; `release(data)` when no launch can run it any more
// (the stream's work done, or the graph holding it destroyed). Returns the CUresult a launch would.
CUresult bertcEmulatedLaunchLibraryKernel(CUstream stream, const char* what, const bertcEmulatedAccess* accesses,
                                          size_t access_count, bertcEmulatedRun run, void* data,
                                          void (*release)(void*));

// What the kernels ran: from the first call on, the driver counts each PTX kernel launch that runs
// (the PTX emulator's counts, as words of ptx/counts_words.h's layout); each call hands `each` the
// launches counted since the call before, in the order they ran (work queued is run first; the
// first 100000 of them: the rest are dropped). The libraries' kernels are not counted. For profiles: counts and projections, never times.
typedef void (*bertcEmulatedCountedLaunch)(void* user, const char* kernel, const uint64_t* words, size_t word_count);
CUresult bertcEmulatedTakeLaunchCounts(bertcEmulatedCountedLaunch each, void* user);
typedef CUresult (*bertcEmulatedTakeLaunchCountsFn)(bertcEmulatedCountedLaunch, void*);

typedef CUresult (*bertcEmulatedLaunchLibraryKernelFn)(CUstream, const char*, const bertcEmulatedAccess*, size_t,
                                                       bertcEmulatedRun, void*, void (*)(void*));
}

namespace bertc::cuda_emulation {

// `symbol` of the libcuda.so.1 the process loaded (as NVIDIA's libraries use the driver the program
// loaded: never loading one themselves), or nullptr where none is loaded or it has no such symbol
// (not bertc's emulated driver, for its own calls).
template <typename Fn>
Fn loaded_driver_symbol(const char* symbol) {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!driver) return nullptr;
  auto f = reinterpret_cast<Fn>(dlsym(driver, symbol));
  dlclose(driver);  // (the program's reference keeps it loaded)
  return f;
}

}  // namespace bertc::cuda_emulation
