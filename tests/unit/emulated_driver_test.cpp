// bertc's emulated CUDA driver (cuda_emulation/), loaded as a program loads libcuda.so.1 and called
// through the driver API as cuda.h declares it: a kernel of PTX runs on the PTX emulator; memory
// is the profile's; cubins and PTX for a newer GPU are refused; streams, events and capture follow
// the documented rules (each rule planted broken: a forbidden call, an unjoined fork). The GPU is
// a P40 with 64 MiB (BERTC_EMULATED_GPU, BERTC_EMULATED_GPU_MEMORY_MB, set before the first call).
#include <cuda.h>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "ptx/counts_words.h"

namespace {

// A kernel as NVRTC would write it (PTX ISA: ld.param, cvta, mad, setp, a predicated branch):
// x[i] += 1 for i < n.
const char* kAddOne = R"(
.version 7.0
.target sm_61
.address_size 64

.visible .entry add_one(
    .param .u64 add_one_param_0,
    .param .u32 add_one_param_1
)
{
    .reg .pred %p<2>;
    .reg .f32 %f<3>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<5>;

    ld.param.u64 %rd1, [add_one_param_0];
    ld.param.u32 %r2, [add_one_param_1];
    mov.u32 %r3, %ctaid.x;
    mov.u32 %r4, %ntid.x;
    mov.u32 %r5, %tid.x;
    mad.lo.s32 %r1, %r3, %r4, %r5;
    setp.ge.s32 %p1, %r1, %r2;
    @%p1 bra $L__done;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.s32 %rd3, %r1, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.f32 %f1, [%rd4];
    add.f32 %f2, %f1, 0f3F800000;
    st.global.f32 [%rd4], %f2;
$L__done:
    ret;
}
)";

// The driver's entry points, by the names libcuda.so.1 exports.
struct Api {
  void* lib = nullptr;
  template <typename Fn>
  Fn get(const char* name) {
    void* f = dlsym(lib, name);
    EXPECT_NE(f, nullptr) << name;
    return reinterpret_cast<Fn>(f);
  }
};

class EmulatedDriver : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    setenv("BERTC_EMULATED_GPU", "p40", 1);
    setenv("BERTC_EMULATED_GPU_MEMORY_MB", "64", 1);
    api.lib = dlopen(BERTC_EMULATED_CUDA, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(api.lib, nullptr) << dlerror();
    ASSERT_EQ(api.get<CUresult (*)(unsigned)>("cuInit")(0), CUDA_SUCCESS);
    CUcontext context = nullptr;
    ASSERT_EQ(api.get<CUresult (*)(CUcontext*, CUdevice)>("cuDevicePrimaryCtxRetain")(&context, 0), CUDA_SUCCESS);
    ASSERT_EQ(api.get<CUresult (*)(CUcontext)>("cuCtxSetCurrent")(context), CUDA_SUCCESS);
  }

  void SetUp() override {
    alloc = api.get<decltype(alloc)>("cuMemAlloc_v2");
    free_ = api.get<decltype(free_)>("cuMemFree_v2");
    to_device = api.get<decltype(to_device)>("cuMemcpyHtoDAsync_v2");
    to_host = api.get<decltype(to_host)>("cuMemcpyDtoHAsync_v2");
    load = api.get<decltype(load)>("cuModuleLoadDataEx");
    function = api.get<decltype(function)>("cuModuleGetFunction");
    launch_kernel = api.get<decltype(launch_kernel)>("cuLaunchKernel");
    stream_create = api.get<decltype(stream_create)>("cuStreamCreate");
    sync = api.get<decltype(sync)>("cuStreamSynchronize");
    begin = api.get<decltype(begin)>("cuStreamBeginCapture_v2");
    end = api.get<decltype(end)>("cuStreamEndCapture");
    event_create = api.get<decltype(event_create)>("cuEventCreate");
    record = api.get<decltype(record)>("cuEventRecord");
    wait = api.get<decltype(wait)>("cuStreamWaitEvent");
    ASSERT_EQ(stream_create(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CUmodule module = nullptr;
    ASSERT_EQ(load(&module, kAddOne, 0, nullptr, nullptr), CUDA_SUCCESS);
    ASSERT_EQ(function(&add_one, module, "add_one"), CUDA_SUCCESS);
  }

  // x[i] += 1 for each of x's n floats, on `s`.
  CUresult add(CUdeviceptr x, unsigned n, CUstream s) {
    void* args[] = {&x, &n};
    return launch_kernel(add_one, (n + 31) / 32, 1, 1, 32, 1, 1, 0, s, args, nullptr);
  }
  // n floats of device memory, zero.
  CUdeviceptr zeroed(size_t n) {
    CUdeviceptr x = 0;
    EXPECT_EQ(alloc(&x, n * sizeof(float)), CUDA_SUCCESS);
    const std::vector<float> zeros(n, 0.0f);
    EXPECT_EQ(to_device(x, zeros.data(), n * sizeof(float), stream), CUDA_SUCCESS);  // (pageable: staged)
    return x;
  }
  std::vector<float> read(CUdeviceptr x, size_t n) {
    std::vector<float> out(n);
    EXPECT_EQ(to_host(out.data(), x, n * sizeof(float), stream), CUDA_SUCCESS);  // (pageable: returns done)
    return out;
  }

  static Api api;
  CUresult (*alloc)(CUdeviceptr*, size_t);
  CUresult (*free_)(CUdeviceptr);
  CUresult (*to_device)(CUdeviceptr, const void*, size_t, CUstream);
  CUresult (*to_host)(void*, CUdeviceptr, size_t, CUstream);
  CUresult (*load)(CUmodule*, const void*, unsigned, CUjit_option*, void**);
  CUresult (*function)(CUfunction*, CUmodule, const char*);
  CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                            void**, void**);
  CUresult (*stream_create)(CUstream*, unsigned);
  CUresult (*sync)(CUstream);
  CUresult (*begin)(CUstream, CUstreamCaptureMode);
  CUresult (*end)(CUstream, CUgraph*);
  CUresult (*event_create)(CUevent*, unsigned);
  CUresult (*record)(CUevent, CUstream);
  CUresult (*wait)(CUstream, CUevent, unsigned);
  CUstream stream = nullptr;
  CUfunction add_one = nullptr;
};
Api EmulatedDriver::api;

TEST_F(EmulatedDriver, IsTheProfilesGpuAndSaysItIsEmulated) {
  int major = 0, minor = 0, sms = 0;
  auto attribute = api.get<CUresult (*)(int*, CUdevice_attribute, CUdevice)>("cuDeviceGetAttribute");
  EXPECT_EQ(attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0), CUDA_SUCCESS);
  EXPECT_EQ(attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0), CUDA_SUCCESS);
  EXPECT_EQ(attribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0), CUDA_SUCCESS);
  EXPECT_EQ(major * 10 + minor, 61);
  EXPECT_EQ(sms, 30);  // (a Tesla P40's 30 multiprocessors)
  char name[128] = {};
  EXPECT_EQ(api.get<CUresult (*)(char*, int, CUdevice)>("cuDeviceGetName")(name, sizeof name, 0), CUDA_SUCCESS);
  EXPECT_NE(std::string(name).find("P40"), std::string::npos) << name;
  EXPECT_NE(std::string(name).find("emulated"), std::string::npos) << name;
  size_t total = 0;
  EXPECT_EQ(api.get<CUresult (*)(size_t*, CUdevice)>("cuDeviceTotalMem_v2")(&total, 0), CUDA_SUCCESS);
  EXPECT_EQ(total, size_t{64} << 20);
}

TEST_F(EmulatedDriver, AKernelOfPtxRunsOnTheDevicesMemory) {
  CUdeviceptr x = 0;
  ASSERT_EQ(alloc(&x, 100 * sizeof(float)), CUDA_SUCCESS);
  std::vector<float> host(100);
  for (size_t i = 0; i < host.size(); ++i) host[i] = float(i);
  ASSERT_EQ(to_device(x, host.data(), host.size() * sizeof(float), stream), CUDA_SUCCESS);
  std::fill(host.begin(), host.end(), -1.0f);  // (pageable: staged when called, so this is not copied)
  ASSERT_EQ(add(x, 100, stream), CUDA_SUCCESS);
  ASSERT_EQ(add(x, 100, stream), CUDA_SUCCESS);
  const std::vector<float> out = read(x, 100);
  for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], float(i) + 2) << i;
  EXPECT_EQ(free_(x), CUDA_SUCCESS);
}

// The counts of what its kernels ran (bertcEmulatedTakeLaunchCounts, for --profile): none before the
// first call (it starts counting); then each launch run, in order, with the emulator's counts —
// add_one over 100 floats in blocks of 32 is 4 blocks of one warp each, 100 lanes adding 1.0.
TEST_F(EmulatedDriver, CountsWhatItsKernelsRan) {
  using Each = void (*)(void*, const char*, const uint64_t*, size_t);
  const auto take = api.get<CUresult (*)(Each, void*)>("bertcEmulatedTakeLaunchCounts");
  struct Seen {
    std::vector<std::string> kernels;
    std::vector<bertc::ptx::LaunchCounts> counts;
  } seen;
  const Each each = [](void* user, const char* kernel, const uint64_t* words, size_t n) {
    auto& s = *static_cast<Seen*>(user);
    s.kernels.push_back(kernel);
    s.counts.push_back(bertc::ptx::counts_from_words(std::span(words, n)));
  };
  const CUdeviceptr x = zeroed(100);
  ASSERT_EQ(add(x, 100, stream), CUDA_SUCCESS);
  ASSERT_EQ(take(each, &seen), CUDA_SUCCESS);
  EXPECT_TRUE(seen.kernels.empty());  // (run before counting began)
  ASSERT_EQ(add(x, 100, stream), CUDA_SUCCESS);
  ASSERT_EQ(add(x, 64, stream), CUDA_SUCCESS);
  ASSERT_EQ(take(each, &seen), CUDA_SUCCESS);
  ASSERT_EQ(seen.kernels, (std::vector<std::string>{"add_one", "add_one"}));
  EXPECT_EQ(seen.counts[0].blocks, 4u);
  EXPECT_EQ(seen.counts[0].warps, 4u);
  EXPECT_EQ(seen.counts[1].blocks, 2u);
  EXPECT_EQ(seen.counts[0].flops, 100.0);  // (one add.f32 a lane in range)
  EXPECT_EQ(seen.counts[1].flops, 64.0);
  EXPECT_EQ(read(x, 100)[99], 2.0f);
}

TEST_F(EmulatedDriver, MemoryIsTheProfilesAndRunsOut) {
  size_t free_before = 0, total = 0, free_after = 0;
  auto info = api.get<CUresult (*)(size_t*, size_t*)>("cuMemGetInfo_v2");
  ASSERT_EQ(info(&free_before, &total), CUDA_SUCCESS);
  CUdeviceptr big = 0;
  EXPECT_EQ(alloc(&big, total + 1), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(alloc(&big, 1 << 20), CUDA_SUCCESS);
  ASSERT_EQ(info(&free_after, &total), CUDA_SUCCESS);
  EXPECT_EQ(free_before - free_after, size_t{1} << 20);
  EXPECT_EQ(free_(big), CUDA_SUCCESS);
  EXPECT_EQ(free_(big), CUDA_ERROR_INVALID_VALUE);  // (freed twice)
}

TEST_F(EmulatedDriver, MachineCodeAndPtxForANewerGpuAreRefused) {
  CUmodule m = nullptr;
  const char cubin[] = "\x7f" "ELF....";
  EXPECT_EQ(load(&m, cubin, 0, nullptr, nullptr), CUDA_ERROR_NO_BINARY_FOR_GPU);
  std::string newer = kAddOne;
  newer.replace(newer.find("sm_61"), 5, "sm_80");
  EXPECT_EQ(load(&m, newer.c_str(), 0, nullptr, nullptr), CUDA_ERROR_NO_BINARY_FOR_GPU);
  char log[512] = {};
  CUjit_option keys[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {log, reinterpret_cast<void*>(uintptr_t{sizeof log})};
  EXPECT_EQ(load(&m, ".version 7.0\n.target sm_61\n.address_size 64\n.visible .entry k() { frobnicate; }\n", 2, keys,
                 values),
            CUDA_ERROR_INVALID_PTX);
  EXPECT_NE(std::string(log).find("does not compile"), std::string::npos) << log;
  CUfunction f = nullptr;
  CUmodule good = nullptr;
  ASSERT_EQ(load(&good, kAddOne, 0, nullptr, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(function(&f, good, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
}

TEST_F(EmulatedDriver, ACapturedGraphRunsOnlyWhenLaunchedAndEachTime) {
  const CUdeviceptr x = zeroed(64);
  ASSERT_EQ(begin(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
  ASSERT_EQ(add(x, 64, stream), CUDA_SUCCESS);
  ASSERT_EQ(add(x, 64, stream), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(end(stream, &graph), CUDA_SUCCESS);
  EXPECT_EQ(read(x, 64)[5], 0.0f);  // captured, not run
  size_t nodes = 0;
  ASSERT_EQ(api.get<CUresult (*)(CUgraph, CUgraphNode*, size_t*)>("cuGraphGetNodes")(graph, nullptr, &nodes), CUDA_SUCCESS);
  EXPECT_EQ(nodes, 2u);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(api.get<CUresult (*)(CUgraphExec*, CUgraph, unsigned long long)>("cuGraphInstantiateWithFlags")(&exec, graph, 0),
            CUDA_SUCCESS);
  auto graph_launch = api.get<CUresult (*)(CUgraphExec, CUstream)>("cuGraphLaunch");
  for (int i = 0; i < 3; ++i) ASSERT_EQ(graph_launch(exec, stream), CUDA_SUCCESS);
  ASSERT_EQ(sync(stream), CUDA_SUCCESS);
  EXPECT_EQ(read(x, 64)[5], 6.0f);
}

// Planted: an allocation, then a wait for the capturing stream, each while the stream captures.
TEST_F(EmulatedDriver, ForbiddenCallsDuringCaptureInvalidateIt) {
  const CUdeviceptr x = zeroed(64);
  ASSERT_EQ(begin(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
  ASSERT_EQ(add(x, 64, stream), CUDA_SUCCESS);
  CUdeviceptr during = 0;
  EXPECT_EQ(alloc(&during, 256), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(add(x, 64, stream), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);  // every use after
  CUgraph graph = reinterpret_cast<CUgraph>(1);
  EXPECT_EQ(end(stream, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(graph, nullptr);
  // The capture is over: the stream works again, and waiting for a capturing stream is refused.
  ASSERT_EQ(add(x, 64, stream), CUDA_SUCCESS);
  ASSERT_EQ(begin(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(sync(stream), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(end(stream, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(sync(stream), CUDA_SUCCESS);
  EXPECT_EQ(read(x, 64)[3], 1.0f);  // the one launch made outside the captures
}

// The three capture modes decide whose allocations a capture refuses (cuda.h,
// cuThreadExchangeStreamCaptureMode; every thread here keeps the default mode, global): relaxed
// refuses none; thread-local only the capturing thread's (tested above), not another thread's;
// global another thread's too, which invalidates the capture. Planted in the emulation, either
// mode's rule swapped for the other's fails here.
TEST_F(EmulatedDriver, CaptureModesDecideWhoseAllocationsAreRefused) {
  auto allocate_in_another_thread = [this] {
    CUresult rc = CUDA_SUCCESS;
    std::thread([&] {
      CUdeviceptr p = 0;
      rc = alloc(&p, 256);
    }).join();
    return rc;
  };
  CUgraph graph = nullptr;
  CUdeviceptr mine = 0;
  ASSERT_EQ(begin(stream, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  EXPECT_EQ(alloc(&mine, 256), CUDA_SUCCESS);
  EXPECT_EQ(end(stream, &graph), CUDA_SUCCESS);
  ASSERT_EQ(begin(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
  EXPECT_EQ(allocate_in_another_thread(), CUDA_SUCCESS);
  EXPECT_EQ(end(stream, &graph), CUDA_SUCCESS);
  ASSERT_EQ(begin(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(allocate_in_another_thread(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(end(stream, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
}

// Two streams ordered only by an event: the emulation runs ready streams in a seeded order, so
// work the event does not order would be seen out of order in some of these rounds (planted:
// with the wait left out, the copy reads the buffer before the first stream's launch).
TEST_F(EmulatedDriver, AnEventOrdersTwoStreamsInEveryRound) {
  CUdeviceptr x = 0;
  ASSERT_EQ(alloc(&x, 64 * sizeof(float)), CUDA_SUCCESS);
  CUstream other = nullptr;
  CUevent done = nullptr;
  ASSERT_EQ(stream_create(&other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(event_create(&done, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  void* pinned = nullptr;
  ASSERT_EQ(api.get<CUresult (*)(void**, size_t, unsigned)>("cuMemHostAlloc")(&pinned, 64 * sizeof(float), 0),
            CUDA_SUCCESS);
  const std::vector<float> zeros(64, 0.0f);
  for (int round = 0; round < 20; ++round) {
    ASSERT_EQ(to_device(x, zeros.data(), 64 * sizeof(float), stream), CUDA_SUCCESS);
    ASSERT_EQ(add(x, 64, stream), CUDA_SUCCESS);
    ASSERT_EQ(record(done, stream), CUDA_SUCCESS);
    ASSERT_EQ(wait(other, done, 0), CUDA_SUCCESS);
    ASSERT_EQ(to_host(pinned, x, 64 * sizeof(float), other), CUDA_SUCCESS);  // (pinned: runs when waited for)
    ASSERT_EQ(sync(other), CUDA_SUCCESS);
    ASSERT_EQ(static_cast<float*>(pinned)[7], 1.0f) << "round " << round;
    ASSERT_EQ(sync(stream), CUDA_SUCCESS);
  }
}

// A second stream forked from the capture by an event must be joined back before it ends.
TEST_F(EmulatedDriver, AForkedStreamMustBeJoinedBeforeTheCaptureEnds) {
  CUdeviceptr x = 0;
  ASSERT_EQ(alloc(&x, 64 * sizeof(float)), CUDA_SUCCESS);
  CUstream side = nullptr;
  CUevent forked = nullptr, joined = nullptr;
  ASSERT_EQ(stream_create(&side, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(event_create(&forked, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  ASSERT_EQ(event_create(&joined, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  for (bool join : {true, false}) {
    ASSERT_EQ(begin(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
    ASSERT_EQ(add(x, 64, stream), CUDA_SUCCESS);
    ASSERT_EQ(record(forked, stream), CUDA_SUCCESS);
    ASSERT_EQ(wait(side, forked, 0), CUDA_SUCCESS);  // side joins the capture
    ASSERT_EQ(add(x, 64, side), CUDA_SUCCESS);
    if (join) {
      ASSERT_EQ(record(joined, side), CUDA_SUCCESS);
      ASSERT_EQ(wait(stream, joined, 0), CUDA_SUCCESS);
    }
    CUgraph graph = nullptr;
    EXPECT_EQ(end(stream, &graph), join ? CUDA_SUCCESS : CUDA_ERROR_STREAM_CAPTURE_UNJOINED) << join;
    EXPECT_EQ(graph != nullptr, join);
  }
  // An event last recorded in a capture that has ended stands for no work: waiting for it is
  // refused, not a way back into that capture; recorded outside a capture it orders again.
  EXPECT_EQ(wait(side, forked, 0), CUDA_ERROR_CAPTURED_EVENT);
  ASSERT_EQ(record(forked, stream), CUDA_SUCCESS);
  EXPECT_EQ(wait(side, forked, 0), CUDA_SUCCESS);
}

// Last: a kernel's finding is a device fault, and every call after it fails (as on a GPU).
TEST_F(EmulatedDriver, AKernelsFindingFailsTheNextWait) {
  const CUdeviceptr x = zeroed(64);
  ASSERT_EQ(add(x, 128, stream), CUDA_SUCCESS);  // 128 floats of the 256 bytes allocated: memcheck's
  EXPECT_EQ(sync(stream), CUDA_ERROR_LAUNCH_FAILED);
  CUdeviceptr more = 0;
  EXPECT_EQ(alloc(&more, 256), CUDA_ERROR_LAUNCH_FAILED);
}

}  // namespace
