// bertc's emulated NCCL (cuda_emulation/, libnccl.so.2) on the emulated CUDA driver, each rank a
// process of its own (forked here, loading both libraries as a program does): all-reduces of f32,
// f16 and bf16 (sum, avg, max) give every rank the values worked out by hand; a group's calls go
// as one kernel; an all-reduce captured in a graph is replayed with it; and where NCCL would hang
// — ranks calling with different counts (planted), a rank that ended — the emulation waits as NCCL
// does and says why through ncclCommGetAsyncError and ncclGetLastError. Arguments nccl.h rules
// out are refused.
#include <cuda.h>
#include <dlfcn.h>
#include <nccl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace {

template <typename Fn>
Fn entry(void* lib, const char* name) {
  void* f = lib ? dlsym(lib, name) : nullptr;
  if (!f) {
    std::fprintf(stderr, "no %s\n", name);
    _exit(90);
  }
  return reinterpret_cast<Fn>(f);
}

// One rank's process: the emulated driver and NCCL loaded, a P40's context current, a stream.
struct Rank {
  void* driver = nullptr;
  void* nccl = nullptr;
  CUstream stream = nullptr;
  ncclComm_t comm = nullptr;

  Rank(int rank, int ranks, const ncclUniqueId& id) {
    setenv("BERTC_EMULATED_GPU", "p40", 1);
    setenv("BERTC_EMULATED_GPU_MEMORY_MB", "64", 1);
    driver = dlopen(BERTC_EMULATED_CUDA, RTLD_NOW | RTLD_LOCAL);
    nccl = dlopen(BERTC_EMULATED_NCCL, RTLD_NOW | RTLD_LOCAL);
    CUcontext context = nullptr;
    if (entry<CUresult (*)(unsigned)>(driver, "cuInit")(0) ||
        entry<CUresult (*)(CUcontext*, CUdevice)>(driver, "cuDevicePrimaryCtxRetain")(&context, 0) ||
        entry<CUresult (*)(CUcontext)>(driver, "cuCtxSetCurrent")(context) ||
        entry<CUresult (*)(CUstream*, unsigned)>(driver, "cuStreamCreate")(&stream, CU_STREAM_NON_BLOCKING))
      _exit(91);
    if (const ncclResult_t rc = entry<ncclResult_t (*)(ncclComm_t*, int, ncclUniqueId, int)>(nccl, "ncclCommInitRank")(
            &comm, ranks, id, rank)) {
      std::fprintf(stderr, "ncclCommInitRank: %d\n", rc);
      _exit(92);
    }
  }
  // Device memory holding `bytes` of `values`.
  CUdeviceptr device(const void* values, size_t bytes) {
    CUdeviceptr p = 0;
    if (entry<CUresult (*)(CUdeviceptr*, size_t)>(driver, "cuMemAlloc_v2")(&p, bytes) ||
        entry<CUresult (*)(CUdeviceptr, const void*, size_t, CUstream)>(driver, "cuMemcpyHtoDAsync_v2")(p, values, bytes,
                                                                                                        stream))
      _exit(93);
    return p;
  }
  template <typename T>
  std::vector<T> read(CUdeviceptr p, size_t n) {
    std::vector<T> out(n);
    if (entry<CUresult (*)(void*, CUdeviceptr, size_t, CUstream)>(driver, "cuMemcpyDtoHAsync_v2")(out.data(), p,
                                                                                                  n * sizeof(T), stream))
      _exit(94);
    return out;
  }
  ncclResult_t all_reduce(CUdeviceptr send, CUdeviceptr recv, size_t count, ncclDataType_t type, ncclRedOp_t op) {
    return entry<ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t)>(
        nccl, "ncclAllReduce")(reinterpret_cast<void*>(send), reinterpret_cast<void*>(recv), count, type, op, comm,
                               reinterpret_cast<cudaStream_t>(stream));
  }
  CUresult sync() { return entry<CUresult (*)(CUstream)>(driver, "cuStreamSynchronize")(stream); }
  // Waits up to 10 s for an asynchronous error; returns it with NCCL's last error text.
  std::pair<ncclResult_t, std::string> async_error() {
    ncclResult_t e = ncclSuccess;
    for (int i = 0; i < 200 && e == ncclSuccess; ++i) {
      entry<ncclResult_t (*)(ncclComm_t, ncclResult_t*)>(nccl, "ncclCommGetAsyncError")(comm, &e);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return {e, entry<const char* (*)(ncclComm_t)>(nccl, "ncclGetLastError")(comm)};
  }
};

// Runs `body(rank)` in `ranks` forked processes sharing one new communicator; each must exit 0
// (a failed check exits with its line number).
void in_ranks(int ranks, const std::function<void(Rank&)>& body, const std::function<bool(int)>& leaves_early = {}) {
  void* nccl = dlopen(BERTC_EMULATED_NCCL, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(nccl, nullptr) << dlerror();
  ncclUniqueId id{};
  ASSERT_EQ(entry<ncclResult_t (*)(ncclUniqueId*)>(nccl, "ncclGetUniqueId")(&id), ncclSuccess);
  std::vector<pid_t> pids;
  for (int r = 0; r < ranks; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      Rank rank(r, ranks, id);
      if (leaves_early && leaves_early(r)) _exit(0);
      body(rank);
      _exit(0);
    }
    pids.push_back(pid);
  }
  for (int r = 0; r < ranks; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "rank " << r << " failed at line " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
}

#define RANK_CHECK(condition)               \
  do {                                      \
    if (!(condition)) {                     \
      std::fprintf(stderr, "failed: %s\n", #condition); \
      _exit(__LINE__ % 256 ? __LINE__ % 256 : 1); \
    }                                       \
  } while (0)

// Rank r holds x_r = (r + 1) * [1, 2, 3, 0.5]: the sum of 3 ranks is 6 x_0, their average 2 x_0,
// the max 3 x_0. In f16 and bf16 too (these values are exact in both); f16 sums in place.
TEST(EmulatedNccl, AllReduceGivesEveryRankTheSameValues) {
  in_ranks(3, [](Rank& rank) {
    int me = 0;
    entry<ncclResult_t (*)(ncclComm_t, int*)>(rank.nccl, "ncclCommUserRank")(rank.comm, &me);
    const float k = static_cast<float>(me + 1);
    const std::vector<float> x{k, 2 * k, 3 * k, 0.5f * k};
    const CUdeviceptr send = rank.device(x.data(), 16), sum = rank.device(x.data(), 16), avg = rank.device(x.data(), 16),
                      max = rank.device(x.data(), 16);
    // f16 and bf16 bits of x (1, 2, 3, 0.5 times k for k = 1, 2, 3: each exact).
    const uint16_t f16[3][4] = {{0x3c00, 0x4000, 0x4200, 0x3800}, {0x4000, 0x4400, 0x4600, 0x3c00},
                                {0x4200, 0x4600, 0x4880, 0x3e00}};
    const uint16_t bf16[3][4] = {{0x3f80, 0x4000, 0x4040, 0x3f00}, {0x4000, 0x4080, 0x40c0, 0x3f80},
                                 {0x4040, 0x40c0, 0x4110, 0x3fc0}};
    const CUdeviceptr h = rank.device(f16[me], 8), b = rank.device(bf16[me], 8), b_out = rank.device(bf16[me], 8);
    const auto group_start = entry<ncclResult_t (*)()>(rank.nccl, "ncclGroupStart");
    const auto group_end = entry<ncclResult_t (*)()>(rank.nccl, "ncclGroupEnd");
    RANK_CHECK(group_start() == ncclSuccess);
    RANK_CHECK(rank.all_reduce(send, sum, 4, ncclFloat32, ncclSum) == ncclSuccess);
    RANK_CHECK(rank.all_reduce(send, avg, 4, ncclFloat32, ncclAvg) == ncclSuccess);
    RANK_CHECK(rank.all_reduce(send, max, 4, ncclFloat32, ncclMax) == ncclSuccess);
    RANK_CHECK(rank.all_reduce(h, h, 4, ncclFloat16, ncclSum) == ncclSuccess);
    RANK_CHECK(rank.all_reduce(b, b_out, 4, ncclBfloat16, ncclSum) == ncclSuccess);
    RANK_CHECK(group_end() == ncclSuccess);
    RANK_CHECK(rank.sync() == CUDA_SUCCESS);
    RANK_CHECK(rank.read<float>(sum, 4) == (std::vector<float>{6, 12, 18, 3}));
    RANK_CHECK(rank.read<float>(avg, 4) == (std::vector<float>{2, 4, 6, 1}));
    RANK_CHECK(rank.read<float>(max, 4) == (std::vector<float>{3, 6, 9, 1.5f}));
    // 6, 12, 18, 3 in f16 and bf16.
    RANK_CHECK(rank.read<uint16_t>(h, 4) == (std::vector<uint16_t>{0x4600, 0x4a00, 0x4c80, 0x4200}));
    RANK_CHECK(rank.read<uint16_t>(b_out, 4) == (std::vector<uint16_t>{0x40c0, 0x4140, 0x4190, 0x4040}));
    RANK_CHECK(rank.read<uint16_t>(b, 4) == (std::vector<uint16_t>(bf16[me], bf16[me] + 4)));  // (not in place: kept)
  });
}

// Captured on each rank's stream, the all-reduce is a node of the graph, run at each launch on
// what the buffer holds then: launched twice, the sum of 2 ranks' ones doubles each time.
TEST(EmulatedNccl, ACapturedAllReduceRunsAtEachLaunchOfTheGraph) {
  in_ranks(2, [](Rank& rank) {
    const std::vector<float> ones(300000, 1.0f);  // (more than one 1 MiB chunk)
    const CUdeviceptr x = rank.device(ones.data(), ones.size() * 4);
    RANK_CHECK(rank.sync() == CUDA_SUCCESS);
    RANK_CHECK(entry<CUresult (*)(CUstream, CUstreamCaptureMode)>(rank.driver, "cuStreamBeginCapture_v2")(
                   rank.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == CUDA_SUCCESS);
    RANK_CHECK(rank.all_reduce(x, x, ones.size(), ncclFloat32, ncclSum) == ncclSuccess);
    CUgraph graph = nullptr;
    RANK_CHECK(entry<CUresult (*)(CUstream, CUgraph*)>(rank.driver, "cuStreamEndCapture")(rank.stream, &graph) ==
               CUDA_SUCCESS);
    RANK_CHECK(rank.read<float>(x, 1)[0] == 1);  // (captured, not run)
    CUgraphExec exec = nullptr;
    RANK_CHECK(entry<CUresult (*)(CUgraphExec*, CUgraph, unsigned long long)>(rank.driver,
                                                                              "cuGraphInstantiateWithFlags")(
                   &exec, graph, 0) == CUDA_SUCCESS);
    const auto launch = entry<CUresult (*)(CUgraphExec, CUstream)>(rank.driver, "cuGraphLaunch");
    RANK_CHECK(launch(exec, rank.stream) == CUDA_SUCCESS);
    RANK_CHECK(launch(exec, rank.stream) == CUDA_SUCCESS);
    const std::vector<float> got = rank.read<float>(x, ones.size());
    RANK_CHECK(got.front() == 4 && got.back() == 4);
  });
}

// Planted: rank 1 all-reduces 3 floats where rank 0 all-reduces 4. NCCL's behaviour is undefined
// (a hang, a crash or wrong data); the emulation hangs too, and each rank's communicator reports
// ncclInvalidUsage, naming both calls.
TEST(EmulatedNccl, RanksCallingWithDifferentCountsAreToldWhy) {
  in_ranks(2, [](Rank& rank) {
    int me = 0;
    entry<ncclResult_t (*)(ncclComm_t, int*)>(rank.nccl, "ncclCommUserRank")(rank.comm, &me);
    const std::vector<float> x{1, 2, 3, 4};
    const CUdeviceptr p = rank.device(x.data(), 16);
    RANK_CHECK(rank.all_reduce(p, p, me == 0 ? 4 : 3, ncclFloat32, ncclSum) == ncclSuccess);
    std::thread([&rank] { rank.sync(); }).detach();  // (hangs, as NCCL would)
    const auto [error, why] = rank.async_error();
    RANK_CHECK(error == ncclInvalidUsage);
    RANK_CHECK(why.find("has 4 float32 (sum)") != std::string::npos && why.find("has 3 float32") != std::string::npos);
    _exit(0);
  });
}

// Rank 1 joins and ends; rank 0's all-reduce waits (as NCCL's would) and its communicator reports
// ncclRemoteError naming rank 1, which a program's watchdog reads (bertc's stops every rank then).
TEST(EmulatedNccl, ARankThatEndedIsReportedToTheOthers) {
  in_ranks(
      2,
      [](Rank& rank) {
        const std::vector<float> x{1, 2};
        const CUdeviceptr p = rank.device(x.data(), 8);
        RANK_CHECK(rank.all_reduce(p, p, 2, ncclFloat32, ncclSum) == ncclSuccess);
        std::thread([&rank] { rank.sync(); }).detach();
        const auto [error, why] = rank.async_error();
        RANK_CHECK(error == ncclRemoteError);
        RANK_CHECK(why.find("rank 1 (process") != std::string::npos && why.find("ended") != std::string::npos);
        _exit(0);
      },
      [](int r) { return r == 1; });
}

// What nccl.h rules out, refused with ncclInvalidArgument or ncclInvalidUsage and a reason.
TEST(EmulatedNccl, RefusesWhatNcclRefuses) {
  in_ranks(1, [](Rank& rank) {
    const std::vector<float> x{1};
    const CUdeviceptr p = rank.device(x.data(), 4);
    RANK_CHECK(rank.all_reduce(p, p, 1, static_cast<ncclDataType_t>(42), ncclSum) == ncclInvalidArgument);
    RANK_CHECK(rank.all_reduce(p, p, 1, ncclFloat32, static_cast<ncclRedOp_t>(42)) == ncclInvalidArgument);
    RANK_CHECK(rank.all_reduce(0, p, 1, ncclFloat32, ncclSum) == ncclInvalidArgument);
    RANK_CHECK(entry<ncclResult_t (*)()>(rank.nccl, "ncclGroupEnd")() == ncclInvalidUsage);
    ncclComm_t other = nullptr;
    ncclUniqueId made_up{};
    const auto init = entry<ncclResult_t (*)(ncclComm_t*, int, ncclUniqueId, int)>(rank.nccl, "ncclCommInitRank");
    RANK_CHECK(init(&other, 2, made_up, 0) == ncclInvalidArgument);
    ncclUniqueId id{};
    entry<ncclResult_t (*)(ncclUniqueId*)>(rank.nccl, "ncclGetUniqueId")(&id);
    RANK_CHECK(init(&other, 2, id, 2) == ncclInvalidArgument);  // rank 2 of 2
    RANK_CHECK(std::string(entry<const char* (*)(ncclComm_t)>(rank.nccl, "ncclGetLastError")(nullptr))
                   .find("not a rank") != std::string::npos);
    RANK_CHECK(rank.sync() == CUDA_SUCCESS);
  });
}

// Without bertc's emulated driver in the process, no communicator (and a reason).
TEST(EmulatedNccl, NeedsTheEmulatedDriver) {
  if (dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD)) GTEST_SKIP() << "a driver is already loaded in this process";
  void* nccl = dlopen(BERTC_EMULATED_NCCL, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(nccl, nullptr);
  ncclUniqueId id{};
  entry<ncclResult_t (*)(ncclUniqueId*)>(nccl, "ncclGetUniqueId")(&id);
  ncclComm_t comm = nullptr;
  EXPECT_EQ(entry<ncclResult_t (*)(ncclComm_t*, int, ncclUniqueId, int)>(nccl, "ncclCommInitRank")(&comm, 1, id, 0),
            ncclUnhandledCudaError);
  EXPECT_NE(std::string(entry<const char* (*)(ncclComm_t)>(nccl, "ncclGetLastError")(nullptr)).find("emulated CUDA driver"),
            std::string::npos);
}

}  // namespace
