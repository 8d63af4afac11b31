// The fiber scheduler behind HostEmulator: Boost.Context fibers, round-robin, spinning waits.
#include "codegen/host_emulation.h"

#include <boost/context/fiber.hpp>
#include <boost/context/pooled_fixedsize_stack.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace bertc::codegen {

namespace ctx = boost::context;

struct HostEmulator::Scheduler {
  struct Thread {
    bx_thread_state state{};
    ctx::fiber fiber;  // the thread, while suspended
    ctx::fiber sink;   // inside the thread: the scheduler, to switch back to
    bool done = false;
    struct Copy {
      void* dst;
      const void* src;  // null: zeros
      unsigned int bytes;
    };
    std::vector<std::vector<Copy>> copy_groups{1};  // cp.async: committed groups, then the open one
  };
  struct Barrier {  // counts arrivals; a generation passes when all `size` threads arrived
    int size = 0, arrived = 0;
    unsigned long long generation = 0;
  };
  struct Warp {
    Barrier barrier;
    unsigned int slot[32] = {};
    unsigned char exchange[32][64] = {};
  };

  bx_host_api api{};
  ctx::pooled_fixedsize_stack stacks{64 * 1024};
  std::vector<Thread> threads;
  Thread* running = nullptr;
  Barrier block_barrier;
  std::vector<Warp> warps;
  std::map<int, std::vector<unsigned char>> shared;  // this block's, by declaration key
  unsigned long long events = 0;                      // barriers passed and threads done
  unsigned long long launches = 0;                    // so far: each shuffled launch draws its own order
  bool cooperative = true;
  std::string kernel;
  std::string error;  // raised inside a thread, rethrown by the scheduler

  Scheduler() {
    api.scheduler = this;
    api.sync = [](void* s) { static_cast<Scheduler*>(s)->sync(); };
    api.shfl_xor = [](void* s, unsigned int bits, int mask) { return static_cast<Scheduler*>(s)->shfl_xor(bits, mask); };
    api.shared = [](void* s, unsigned long bytes, int key) { return static_cast<Scheduler*>(s)->shared_memory(bytes, key); };
    api.warp_gather = [](void* s, const void* mine, unsigned int bytes, void* all) {
      static_cast<Scheduler*>(s)->warp_gather(mine, bytes, all);
    };
    api.cp_async = [](void* s, void* dst, const void* src, unsigned int bytes) {
      static_cast<Scheduler*>(s)->cp_async(dst, src, bytes);
    };
    api.cp_async_commit = [](void* s) { static_cast<Scheduler*>(s)->running->copy_groups.emplace_back(); };
    api.cp_async_wait = [](void* s, int pending) { static_cast<Scheduler*>(s)->cp_async_wait(pending); };
    api.misaligned = [](void* s, const char* what, const void* address, unsigned long alignment) {
      static_cast<Scheduler*>(s)->misaligned(what, address, alignment);
    };
    api.check_shared = [](void* s, const char* what, const void* address, unsigned long bytes) {
      static_cast<Scheduler*>(s)->check_shared(what, address, bytes);
    };
  }

  [[noreturn]] void misaligned(const char* what, const void* address, unsigned long alignment) {
    throw EmulationError(fmt::format("kernel {}: {} at address {} (thread {} of block ({},{},{})) is not {}-byte "
                                     "aligned: a GPU faults on it (misaligned address; PTX ISA, Addresses as Operands)",
                                     kernel, what, address, linear_tid(running->state), running->state.bid[0],
                                     running->state.bid[1], running->state.bid[2], alignment));
  }

  // `bytes` at `address` aligned to `bytes` and inside one of this block's shared arrays.
  void check_shared(const char* what, const void* address, unsigned long bytes) {
    const auto at = reinterpret_cast<std::uintptr_t>(address);
    if (at % bytes != 0) misaligned(what, address, bytes);
    for (const auto& [key, array] : shared) {
      const auto begin = reinterpret_cast<std::uintptr_t>(array.data());
      if (at >= begin && at + bytes <= begin + array.size()) return;
    }
    throw EmulationError(fmt::format("kernel {}: {} at address {} (thread {} of block ({},{},{})) is not inside the "
                                     "block's shared memory, which it must be (PTX ISA: a generic address outside "
                                     ".shared is undefined behaviour)",
                                     kernel, what, address, linear_tid(running->state), running->state.bid[0],
                                     running->state.bid[1], running->state.bid[2]));
  }

  // cp.async (PTX ISA): cp-size 4, 8 or 16 bytes, dst in shared memory, both addresses aligned to
  // cp-size; the copy lands at a wait (cp_async_wait).
  void cp_async(void* dst, const void* src, unsigned int bytes) {
    if (bytes != 4 && bytes != 8 && bytes != 16)
      throw EmulationError(fmt::format("kernel {}: cp.async of {} bytes (cp-size is 4, 8 or 16)", kernel, bytes));
    check_shared("a cp.async destination", dst, bytes);
    if (src && reinterpret_cast<std::uintptr_t>(src) % bytes != 0) misaligned("a cp.async source", src, bytes);
    running->copy_groups.back().push_back({dst, src, bytes});
  }

  void yield() { running->sink = std::move(running->sink).resume(); }

  void wait(Barrier& b) {
    if (!cooperative) throw EmulationError(fmt::format("kernel {}: a barrier or shuffle in a launch declared without them", kernel));
    if (++b.arrived == b.size) {
      b.arrived = 0;
      ++b.generation;
      ++events;
      return;
    }
    const unsigned long long generation = b.generation;
    while (b.generation == generation) yield();
  }

  int linear_tid(const bx_thread_state& s) const { return s.tid[0] + s.bdim[0] * (s.tid[1] + s.bdim[1] * s.tid[2]); }

  void sync() { wait(block_barrier); }

  unsigned int shfl_xor(unsigned int bits, int mask) {
    const int lane = linear_tid(running->state) & 31;
    Warp& w = full_warp("a shuffle");
    w.slot[lane] = bits;
    wait(w.barrier);
    const unsigned int got = w.slot[(lane ^ mask) & 31];
    wait(w.barrier);  // nobody overwrites a slot before every lane has read
    return got;
  }

  Warp& full_warp(const char* what) {
    const int tid = linear_tid(running->state);
    Warp& w = warps[static_cast<size_t>(tid >> 5)];
    if (w.barrier.size != 32) throw EmulationError(fmt::format("kernel {}: {} in a partial warp", kernel, what));
    return w;
  }

  void warp_gather(const void* mine, unsigned int bytes, void* all) {
    if (bytes > 64) throw EmulationError(fmt::format("kernel {}: a warp exchange of {} bytes per lane", kernel, bytes));
    Warp& w = full_warp("a matrix instruction");
    const int lane = linear_tid(running->state) & 31;
    std::memcpy(w.exchange[lane], mine, bytes);
    wait(w.barrier);
    for (int l = 0; l < 32; ++l) std::memcpy(static_cast<unsigned char*>(all) + l * bytes, w.exchange[l], bytes);
    wait(w.barrier);  // nobody overwrites a slot before every lane has read
  }

  // Lands every committed group but the newest `pending` (the open group is not committed).
  void cp_async_wait(int pending) {
    auto& groups = running->copy_groups;
    const size_t committed = groups.size() - 1;
    if (pending < 0 || static_cast<size_t>(pending) >= committed) return;
    const size_t land = committed - static_cast<size_t>(pending);
    for (size_t g = 0; g < land; ++g)
      for (const Thread::Copy& c : groups[g]) {
        if (c.src) std::memcpy(c.dst, c.src, c.bytes);
        else std::memset(c.dst, 0, c.bytes);
      }
    groups.erase(groups.begin(), groups.begin() + static_cast<std::ptrdiff_t>(land));
  }

  void* shared_memory(unsigned long bytes, int key) {
    auto [it, fresh] = shared.try_emplace(key);
    if (fresh) it->second.assign(bytes, 0xff);  // NaN as float, -1 as integer: unwritten reads show
    if (it->second.size() != bytes)
      throw EmulationError(fmt::format("kernel {}: shared array at line {} declared with two sizes", kernel, key));
    return it->second.data();
  }

  // Ends a failed block: its threads still suspended are unwound now, while the kernel library
  // their stacks run in is loaded (destroyed later, a fiber would unwind through unmapped code),
  // then the error is thrown.
  [[noreturn]] void abandon_block(std::string why) {
    threads.clear();
    throw EmulationError(std::move(why));
  }

  void run_block(HostEntry entry, void** args, const bx_thread_state& block, ThreadOrder order) {
    const int n = block.bdim[0] * block.bdim[1] * block.bdim[2];
    shared.clear();
    threads.clear();
    threads.resize(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      bx_thread_state& s = threads[static_cast<size_t>(i)].state;
      s = block;
      s.tid[0] = i % block.bdim[0];
      s.tid[1] = (i / block.bdim[0]) % block.bdim[1];
      s.tid[2] = i / (block.bdim[0] * block.bdim[1]);
    }
    if (!cooperative) {  // no switches: each thread runs to its end in turn
      for (int k = 0; k < n; ++k) {
        running = &threads[static_cast<size_t>(order == ThreadOrder::Forward ? k : n - 1 - k)];
        api.current = &running->state;
        entry(args);
      }
      return;
    }
    block_barrier = Barrier{n, 0, 0};
    warps.assign(static_cast<size_t>((n + 31) / 32), Warp{});
    for (size_t w = 0; w < warps.size(); ++w) warps[w].barrier.size = std::min(32, n - static_cast<int>(w) * 32);
    for (Thread& t : threads)
      t.fiber = ctx::fiber(std::allocator_arg, stacks, [this, &t, entry, args](ctx::fiber&& sink) {
        t.sink = std::move(sink);
        try {  // an exception must not leave a fiber: the scheduler rethrows it from its own stack
          entry(args);
        } catch (const EmulationError& e) {
          error = e.what();
        }
        t.done = true;
        ++events;
        return std::move(t.sink);
      });
    for (int live = n; live > 0;) {
      const unsigned long long before = events;
      for (int k = 0; k < n; ++k) {
        Thread& t = threads[static_cast<size_t>(order == ThreadOrder::Forward ? k : n - 1 - k)];
        if (t.done) continue;
        running = &t;
        api.current = &t.state;
        t.fiber = std::move(t.fiber).resume();
        if (!error.empty()) abandon_block(std::exchange(error, {}));
        if (t.done) --live;
      }
      if (live > 0 && events == before)
        abandon_block(fmt::format("kernel {}: block ({},{},{}) waits at a barrier that not all of its threads reach",
                                  kernel, block.bid[0], block.bid[1], block.bid[2]));
    }
  }

  // The blocks' linear indices in the order they run: grid order, or shuffled by a generator
  // seeded with the launch's seed and this emulator's launch count (each launch its own order,
  // the same in every run with that seed).
  std::vector<long long> block_order(const HostLaunch& l) {
    std::vector<long long> order(static_cast<size_t>(l.grid.count()));
    std::iota(order.begin(), order.end(), 0LL);
    if (l.block_order_seed != 0) {
      std::mt19937_64 draw(l.block_order_seed * 0x9e3779b97f4a7c15ULL + launches);
      std::shuffle(order.begin(), order.end(), draw);
    }
    ++launches;
    return order;
  }

  void launch(HostEntry entry, void** args, const HostLaunch& l) {
    cooperative = l.cooperative;
    bx_thread_state block{};
    block.bdim[0] = l.block.x, block.bdim[1] = l.block.y, block.bdim[2] = l.block.z;
    block.gdim[0] = l.grid.x, block.gdim[1] = l.grid.y, block.gdim[2] = l.grid.z;
    for (long long b : block_order(l)) {
      block.bid[0] = static_cast<int>(b % l.grid.x);
      block.bid[1] = static_cast<int>(b / l.grid.x % l.grid.y);
      block.bid[2] = static_cast<int>(b / (static_cast<long long>(l.grid.x) * l.grid.y));
      run_block(entry, args, block, l.order);
    }
    threads.clear();
  }
};

HostEmulator::HostEmulator() : scheduler_(std::make_unique<Scheduler>()) {}
HostEmulator::~HostEmulator() = default;

bx_host_api* HostEmulator::api() { return &scheduler_->api; }

void HostEmulator::launch(const std::string& kernel, HostEntry entry, void** args, const HostLaunch& launch) {
  if (launch.block.count() < 1 || launch.block.count() > 1024 || launch.grid.count() < 1)
    throw EmulationError(fmt::format("kernel {}: launch of {}x{}x{} blocks of {}x{}x{} threads", kernel, launch.grid.x,
                                     launch.grid.y, launch.grid.z, launch.block.x, launch.block.y, launch.block.z));
  scheduler_->kernel = kernel;
  scheduler_->launch(entry, args, launch);
}

}  // namespace bertc::codegen
