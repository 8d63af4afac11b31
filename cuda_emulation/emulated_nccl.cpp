// The emulated NCCL's communicators and all-reduce (see emulated_nccl.h).
#include "cuda_emulation/emulated_nccl.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "ptx/semantics.h"

namespace bertc::cuda_emulation {

namespace {

constexpr uint64_t kMagic = 0x6265727463636c31;  // "bertccl1": an id of this library's making
constexpr size_t kChunkBytes = size_t{1} << 20;   // exchanged a chunk at a time
constexpr int kMostRanks = 1024;

// What a rank posts with each chunk: which collective and its arguments, for the others to check.
struct Posted {
  uint64_t collective = 0, count = 0;
  int32_t type = 0, op = 0;
  bool operator==(const Posted&) const = default;
};

// One rank's part of the segment.
struct Slot {
  std::atomic<int32_t> pid;          // its process, once joined
  std::atomic<uint64_t> posted;      // the sequence number of the chunk in `data`
  std::atomic<uint64_t> consumed;    // the last sequence number whose chunks it has summed
  Posted what;                       // written before `posted`
  alignas(64) unsigned char data[kChunkBytes];
};

}  // namespace

struct SharedSegment {
  uint64_t magic;
  int32_t ranks;
  std::atomic<int32_t> joined, attached;
  Slot slots[1];  // `ranks` of them
};

namespace {

size_t segment_bytes(int ranks) { return offsetof(SharedSegment, slots) + sizeof(Slot) * static_cast<size_t>(ranks); }

// The segment's name in an id: after the magic.
std::string name_of(const ncclUniqueId& id) {
  uint64_t magic = 0;
  std::memcpy(&magic, id.internal, 8);
  if (magic != kMagic) return "";
  return std::string(id.internal + 8, strnlen(id.internal + 8, sizeof id.internal - 8));
}

// A value of `type` as a double (every type summed here fits one exactly), and back, rounded as
// the type rounds (to nearest even for floats).
double load(const unsigned char* p, ncclDataType_t type) {
  switch (type) {
    case ncclInt8: return *reinterpret_cast<const int8_t*>(p);
    case ncclUint8: return *p;
    case ncclInt32: return *reinterpret_cast<const int32_t*>(p);
    case ncclUint32: return *reinterpret_cast<const uint32_t*>(p);
    case ncclFloat16: return ptx::f16_to_f32(*reinterpret_cast<const uint16_t*>(p));
    case ncclBfloat16: return ptx::bf16_to_f32(*reinterpret_cast<const uint16_t*>(p));
    case ncclFloat32: return *reinterpret_cast<const float*>(p);
    default: return *reinterpret_cast<const double*>(p);
  }
}

void store(unsigned char* p, ncclDataType_t type, double v) {
  switch (type) {
    case ncclInt8: *reinterpret_cast<int8_t*>(p) = static_cast<int8_t>(v); break;
    case ncclUint8: *p = static_cast<uint8_t>(v); break;
    case ncclInt32: *reinterpret_cast<int32_t*>(p) = static_cast<int32_t>(v); break;
    case ncclUint32: *reinterpret_cast<uint32_t*>(p) = static_cast<uint32_t>(v); break;
    case ncclFloat16: *reinterpret_cast<uint16_t*>(p) = ptx::f32_to_f16(static_cast<float>(v)); break;
    case ncclBfloat16: *reinterpret_cast<uint16_t*>(p) = ptx::f32_to_bf16(static_cast<float>(v)); break;
    case ncclFloat32: *reinterpret_cast<float*>(p) = static_cast<float>(v); break;
    default: *reinterpret_cast<double*>(p) = v;
  }
}

// `a` op `b`, rounded to the type, as each step of a ring rounds: f32 in float arithmetic; the
// 16-bit floats and the integers summed here in double, which holds their exact result (two f16
// or 8- and 32-bit integers), so one rounding to the type, as a correctly rounded 16-bit add.
double combine(double a, double b, ncclRedOp_t op, ncclDataType_t type) {
  if (type == ncclFloat32) {
    const float x = static_cast<float>(a), y = static_cast<float>(b);
    return op == ncclProd ? x * y : op == ncclMax ? std::max(x, y) : op == ncclMin ? std::min(x, y) : x + y;
  }
  const double r = op == ncclProd ? a * b : op == ncclMax ? std::max(a, b) : op == ncclMin ? std::min(a, b) : a + b;
  unsigned char held[8];
  store(held, type, r);
  return load(held, type);
}

const char* type_name(int32_t type) {
  static const char* names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32",
                                "float64", "bfloat16", "float8e4m3", "float8e5m2"};
  return type >= 0 && type < 12 ? names[type] : "an unknown type";
}

const char* op_name(int32_t op) {
  static const char* names[] = {"sum", "prod", "max", "min", "avg"};
  return op >= 0 && op < 5 ? names[op] : "an unknown op";
}

// Whether process `pid` still runs: not gone, and not a zombie (ended, not yet reaped by its parent).
bool alive(int32_t pid) {
  if (pid <= 0) return true;  // (not joined yet)
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  char state = 0;
  if (FILE* f = std::fopen(fmt::format("/proc/{}/stat", pid).c_str(), "r")) {
    // "pid (comm) S ...": the state follows the last ')'
    char line[512] = "";
    const size_t n = std::fread(line, 1, sizeof line - 1, f);
    std::fclose(f);
    line[n] = 0;
    if (const char* close = std::strrchr(line, ')'); close && close[1] == ' ') state = close[2];
  }
  return state != 'Z' && state != 'X';
}

}  // namespace

size_t nccl_element_bytes(ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
    case ncclUint8: return 1;
    case ncclFloat16:
    case ncclBfloat16: return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    case ncclFloat64: return 8;
    default: return 0;  // (64-bit integers, whose sums a double does not hold, and fp8: not emulated)
  }
}

ncclUniqueId new_unique_id() {
  static std::atomic<uint64_t> made{0};
  std::random_device random;
  ncclUniqueId id{};
  std::memcpy(id.internal, &kMagic, 8);
  const std::string name = fmt::format("/bertc-nccl-{}-{}-{:08x}", getpid(), made++, random());
  std::memcpy(id.internal + 8, name.c_str(), name.size());
  return id;
}

NcclComm::NcclComm(int ranks, const ncclUniqueId& id, int rank) : ranks_(ranks), rank_(rank), name_(name_of(id)) {
  if (ranks < 1 || ranks > kMostRanks || rank < 0 || rank >= ranks)
    throw NcclFailure{ncclInvalidArgument, fmt::format("rank {} of {} ranks: not a rank of such a communicator", rank, ranks)};
  if (name_.empty())
    throw NcclFailure{ncclInvalidArgument, "the ncclUniqueId was not made by this NCCL's ncclGetUniqueId"};
  const int fd = shm_open(name_.c_str(), O_RDWR | O_CREAT, 0600);
  mapped_bytes_ = segment_bytes(ranks);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(mapped_bytes_)) != 0) {
    const int e = errno;
    if (fd >= 0) close(fd);
    throw NcclFailure{ncclSystemError, fmt::format("shared memory {}: {}", name_, std::strerror(e))};
  }
  void* p = mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) throw NcclFailure{ncclSystemError, fmt::format("mapping {}: {}", name_, std::strerror(errno))};
  shared_ = static_cast<SharedSegment*>(p);  // (a fresh segment is zeros: every counter starts at 0)
  Slot& mine = shared_->slots[rank];
  int32_t nobody = 0;
  if (!mine.pid.compare_exchange_strong(nobody, static_cast<int32_t>(getpid()))) {
    munmap(shared_, mapped_bytes_);
    throw NcclFailure{ncclInvalidUsage, fmt::format("rank {} joined the communicator twice (process {} holds it)", rank,
                                                    nobody)};
  }
  ++shared_->joined;
  wait_for([&] { return shared_->joined.load() >= ranks_; }, "joining the communicator");
  // Every rank has it mapped: the last one to get here removes its name (no file left behind).
  if (++shared_->attached == ranks_) shm_unlink(name_.c_str());
}

NcclComm::~NcclComm() {
  if (shared_) munmap(shared_, mapped_bytes_);
}

std::string NcclComm::last_error() const {
  std::lock_guard guard(error_lock_);
  return last_error_;
}

void NcclComm::fail(ncclResult_t error, const std::string& why) {
  {
    std::lock_guard guard(error_lock_);
    if (async_error_.load() != ncclSuccess) return;
    last_error_ = why;
  }
  async_error_ = error;
  std::fprintf(stderr, "bertc emulated NCCL: rank %d: %s\n", rank_, why.c_str());
}

template <typename Ready>
void NcclComm::wait_for(Ready ready, const char* what) {
  auto last_look = std::chrono::steady_clock::now();
  for (int spins = 0; !ready(); ++spins) {
    if (spins < 1000) {
      std::this_thread::yield();
      continue;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    if (std::chrono::steady_clock::now() - last_look < std::chrono::milliseconds(100)) continue;
    last_look = std::chrono::steady_clock::now();
    for (int r = 0; r < ranks_; ++r)
      if (const int32_t pid = shared_->slots[r].pid.load(); r != rank_ && !alive(pid))
        fail(ncclRemoteError, fmt::format("rank {} (process {}) ended while rank {} waited for it ({})", r, pid, rank_,
                                          what));
  }
}

std::string NcclComm::all_reduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op) {
  const size_t bytes = nccl_element_bytes(type);
  const size_t per_chunk = kChunkBytes / bytes;
  const Posted mine{++collectives_, count, type, op};
  const std::string what = fmt::format("all-reduce #{} of {} {}", mine.collective, count, type_name(type));
  const auto* in = static_cast<const unsigned char*>(send);
  auto* out = static_cast<unsigned char*>(recv);
  // (at least one exchange, so that ranks whose counts differ, one of them 0, are found out)
  for (size_t first = 0; first == 0 || first < count; first += per_chunk) {
    const size_t n = std::min(per_chunk, count - first);
    const uint64_t s = ++sequence_;
    Slot& slot = shared_->slots[rank_];
    // Our slot is free once every rank has summed our last chunk.
    wait_for([&] {
      for (int r = 0; r < ranks_; ++r)
        if (shared_->slots[r].consumed.load(std::memory_order_acquire) + 1 < s) return false;
      return true;
    }, what.c_str());
    std::memcpy(slot.data, in + first * bytes, n * bytes);
    slot.what = mine;
    slot.posted.store(s, std::memory_order_release);
    wait_for([&] {
      for (int r = 0; r < ranks_; ++r)
        if (shared_->slots[r].posted.load(std::memory_order_acquire) < s) return false;
      return true;
    }, what.c_str());
    for (int r = 0; r < ranks_; ++r)
      if (const Posted& theirs = shared_->slots[r].what; !(theirs == mine)) {
        // NCCL: undefined (a hang, a crash or wrong data). Said, and waited on as NCCL would.
        fail(ncclInvalidUsage,
             fmt::format("rank {}'s all-reduce #{} has {} {} ({}), rank {}'s #{} has {} {} ({}): every rank must call "
                         "the same collectives with the same count, type and op",
                         rank_, mine.collective, mine.count, type_name(mine.type), op_name(mine.op), r,
                         theirs.collective, theirs.count, type_name(theirs.type), op_name(theirs.op)));
        wait_for([] { return false; }, what.c_str());
      }
    for (size_t i = 0; i < n; ++i) {
      double v = load(shared_->slots[0].data + i * bytes, type);
      for (int r = 1; r < ranks_; ++r) v = combine(v, load(shared_->slots[r].data + i * bytes, type), op, type);
      if (op == ncclAvg) v = combine(v / ranks_, 0, ncclSum, type);  // (the sum, then divided)
      store(out + (first + i) * bytes, type, v);
    }
    slot.consumed.store(s, std::memory_order_release);
    if (count == 0) break;
  }
  return "";
}

}  // namespace bertc::cuda_emulation
