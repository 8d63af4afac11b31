// Collectives over Gloo (see gloo_communicator.h). Gloo's collectives block, so they run one at a
// time, in the order started, on a thread of their own: a sum is "started" by queueing it there,
// and the rank waits for it against a deadline. A failure (a rank's connection closed, or Gloo's
// own timeout) stops this rank at once, naming the rank that is gone where rank 0's rendezvous
// knows it, without unwinding: buffers of sums in flight must not be freed under Gloo's thread.
#include "distributed/gloo_communicator.h"

#include <fmt/format.h>

#ifndef BERTC_HAVE_GLOO

namespace bertc::distributed {

std::unique_ptr<Communicator> gloo_world(const Launch& launch, double) {
  throw RankError(fmt::format(
      "{} started {} ranks (RANK, WORLD_SIZE, MASTER_ADDR), but this bertc was built without Gloo (BERTC_GLOO off, "
      "as the static GPU test build is), which such ranks meet through: build it with Gloo (scripts/setup.sh installs "
      "libgloo-dev), or start the ranks with `mpirun -np {} bertc train ...`",
      launch.launcher, launch.size, launch.size));
}

std::string gloo_library_version() { return ""; }

}  // namespace bertc::distributed

#else

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <numeric>
#include <thread>

#include <csignal>

#include <fmt/ranges.h>
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/broadcast.h>
#include <gloo/allgatherv.h>
#include <gloo/alltoallv.h>
#include <gloo/config.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include "distributed/tcp_store.h"
#include "ir/float16.h"
#include "support/abrupt_exit.h"

namespace bertc::distributed {
namespace {

// The way on after a rank is gone (waiting cannot bring it back). distributed/ does not know whether the
// run has a checkpoint yet, so both ways are said.
constexpr const char* kStartAgain =
    "start every rank again with --resume (from the newest checkpoint), or, if the run made none yet, without it";

using Clock = std::chrono::steady_clock;
using Milliseconds = std::chrono::milliseconds;

Milliseconds milliseconds(double seconds) { return Milliseconds(static_cast<int64_t>(seconds * 1000)); }

// Gloo's rendezvous through ours.
class StoreAdapter : public gloo::rendezvous::Store {
 public:
  StoreAdapter(TcpStoreClient& client, double timeout) : client_(client), timeout_(timeout) {}
  void set(const std::string& key, const std::vector<char>& data) override { client_.set(key, data); }
  std::vector<char> get(const std::string& key) override { return client_.get(key, timeout_); }
  void wait(const std::vector<std::string>& keys) override { wait(keys, milliseconds(timeout_)); }
  void wait(const std::vector<std::string>& keys, const Milliseconds& timeout) override {
    for (const std::string& key : keys) client_.get(key, static_cast<double>(timeout.count()) / 1000);
  }

 private:
  TcpStoreClient& client_;
  double timeout_;
};

template <class T>
void add(void* out, const void* a, const void* b, size_t n) {
  for (size_t i = 0; i < n; ++i) static_cast<T*>(out)[i] = static_cast<const T*>(a)[i] + static_cast<const T*>(b)[i];
}

// 16-bit elements added as floats and rounded back after every addition, as over MPI and NCCL.
template <uint16_t (*Round)(float), float (*Widen)(uint16_t)>
void add_16bit(void* out, const void* a, const void* b, size_t n) {
  for (size_t i = 0; i < n; ++i)
    static_cast<uint16_t*>(out)[i] =
        Round(Widen(static_cast<const uint16_t*>(a)[i]) + Widen(static_cast<const uint16_t*>(b)[i]));
}

// The slots of meet()'s tokens: above every prefix Gloo's collectives use (gloo/types.h).
constexpr uint64_t kArrivedSlot = uint64_t{0xb0} << 56, kGoSlot = kArrivedSlot + 1;

class Gloo : public Communicator {
 public:
  Gloo(const Launch& launch, double timeout) : launch_(launch), timeout_(timeout) {
    // Gloo writes to its sockets without MSG_NOSIGNAL: a peer that died mid-sum would kill this
    // rank with SIGPIPE, silently, instead of failing the sum (which names it).
    std::signal(SIGPIPE, SIG_IGN);
    if (launch.rank == 0) server_ = std::make_unique<TcpStoreServer>(launch.port, launch.size);
    client_ = std::make_unique<TcpStoreClient>(launch.address, launch.port, launch.rank, launch.size, timeout);
    if (server_) wait_for_every_rank(timeout);
    // Gloo listens where the others reach this machine: the address its rendezvous connection
    // came from (rank 0: the one the others came to), not what the host name resolves to (often
    // a loopback address on Debian and Ubuntu), unless GLOO_SOCKET_IFNAME names an interface.
    gloo::transport::tcp::attr attr;
    if (const char* iface = std::getenv("GLOO_SOCKET_IFNAME"); iface && *iface) attr.iface = iface;
    else attr.hostname = own_address(timeout);
    try {
      auto device = gloo::transport::tcp::CreateDevice(attr);
      context_ = std::make_shared<gloo::rendezvous::Context>(launch.rank, launch.size);
      context_->setTimeout(milliseconds(timeout));
      StoreAdapter store(*client_, timeout);
      context_->connectFullMesh(store, device);
    } catch (const RankError&) {
      throw;
    } catch (const std::exception& e) {
      throw RankError(fmt::format("rank {} could not connect to the other ranks over TCP: {} (GLOO_SOCKET_IFNAME "
                                  "chooses the network interface)",
                                  launch.rank, e.what()));
    }
    worker_ = std::thread([this] { work(); });
  }

  ~Gloo() override {
    {
      std::lock_guard lock(mutex_);
      quit_ = true;
    }
    ready_.notify_one();
    worker_.join();
  }

  int rank() const override { return launch_.rank; }
  int size() const override { return launch_.size; }
  int local_rank() const override { return launch_.local_rank; }
  std::string describe() const override {
    return fmt::format("{} over TCP ({} at {}:{}), {} ranks", gloo_library_version(), launch_.launcher,
                       launch_.address, launch_.port, launch_.size);
  }
  std::string engine() const override { return "Gloo"; }
  void set_timeout(double seconds) override { timeout_ = seconds; }

  std::unique_ptr<PendingSum> start_sum(void* data, size_t count, Element element) override {
    auto pending = std::make_unique<Pending>(*this);
    const Milliseconds limit = op_timeout();
    pending->done = submit([this, data, count, element, limit] {
      gloo::AllreduceOptions opts(context_);
      opts.setTimeout(limit);
      switch (element) {
        case Element::F32: opts.setOutput(static_cast<float*>(data), count); opts.setReduceFunction(&add<float>); break;
        case Element::F64: opts.setOutput(static_cast<double*>(data), count); opts.setReduceFunction(&add<double>); break;
        case Element::I64: opts.setOutput(static_cast<int64_t*>(data), count); opts.setReduceFunction(&add<int64_t>); break;
        case Element::F16:
          opts.setOutput(static_cast<uint16_t*>(data), count);
          opts.setReduceFunction(&add_16bit<ir::f16_bits, ir::from_f16_bits>);
          break;
        case Element::Bf16:
          opts.setOutput(static_cast<uint16_t*>(data), count);
          opts.setReduceFunction(&add_16bit<ir::bf16_bits, ir::from_bf16_bits>);
          break;
      }
      gloo::allreduce(opts);
    });
    return pending;
  }

  std::vector<uint64_t> all_gather(uint64_t value, const std::string& what) override {
    std::vector<uint64_t> all(static_cast<size_t>(launch_.size));
    const Milliseconds limit = op_timeout();
    run([&] {
      gloo::AllgatherOptions opts(context_);
      opts.setTimeout(limit);
      opts.setInput(&value, 1);
      opts.setOutput(all.data(), all.size());
      gloo::allgather(opts);
    }, what);
    return all;
  }

  void broadcast(void* data, size_t bytes, int root, const std::string& what) override {
    const Milliseconds limit = op_timeout();
    run([&] {
      gloo::BroadcastOptions opts(context_);
      opts.setTimeout(limit);
      opts.setRoot(root);
      opts.setOutput(static_cast<uint8_t*>(data), bytes);
      gloo::broadcast(opts);
    }, what);
  }

  // A reduce-scatter as an all-to-all of the shares (rank q receives every rank's copy of its own
  // share: the bytes of a ring's reduce-scatter), summed here in rank order.
  void reduce_scatter(float* data, const std::vector<size_t>& counts, const std::string& what) override {
    const Milliseconds limit = op_timeout();
    const size_t ranks = counts.size(), me = static_cast<size_t>(launch_.rank), mine = counts[me];
    std::vector<float> copies(std::max<size_t>(1, mine * ranks));  // (a share of none: still a real buffer)
    run([&] {
      gloo::AlltoallvOptions opts(context_);
      opts.setTimeout(limit);
      opts.setInput(data, std::vector<int64_t>(counts.begin(), counts.end()));
      opts.setOutput(copies.data(), std::vector<int64_t>(ranks, static_cast<int64_t>(mine)));
      gloo::alltoallv(opts);
    }, what);
    float* share = data + std::accumulate(counts.begin(), counts.begin() + static_cast<std::ptrdiff_t>(me), size_t{0});
    for (size_t i = 0; i < mine; ++i) {
      float sum = 0;
      for (size_t q = 0; q < ranks; ++q) sum += copies[q * mine + i];
      share[i] = sum;
    }
  }

  void all_gather_shares(float* data, const std::vector<size_t>& counts, const std::string& what) override {
    const Milliseconds limit = op_timeout();
    const size_t me = static_cast<size_t>(launch_.rank);
    const float* share = data + std::accumulate(counts.begin(), counts.begin() + static_cast<std::ptrdiff_t>(me), size_t{0});
    std::vector<float> mine(share, share + counts[me]);  // (Gloo's input apart from its output)
    if (mine.empty()) mine.push_back(0);  // (a share of none: a real buffer, none of it sent)
    run([&] {
      gloo::AllgathervOptions opts(context_);
      opts.setTimeout(limit);
      opts.setInput(mine.data(), counts[me]);
      opts.setOutput(data, counts);
      gloo::allgatherv(opts);
    }, what);
  }

  void all_to_all(const void* send, void* recv, size_t bytes_each, const std::string& what) override {
    const Milliseconds limit = op_timeout();
    const size_t all = bytes_each * static_cast<size_t>(launch_.size);
    run([&] {
      gloo::AlltoallOptions opts(context_);
      opts.setTimeout(limit);
      opts.setInput(static_cast<uint8_t*>(const_cast<void*>(send)), all);  // (Gloo's input is not const; it only reads)
      opts.setOutput(static_cast<uint8_t*>(recv), all);
      gloo::alltoall(opts);
    }, what);
  }

  void all_gather_bytes(const void* send, void* recv, size_t bytes_each, const std::string& what) override {
    const Milliseconds limit = op_timeout();
    run([&] {
      gloo::AllgatherOptions opts(context_);
      opts.setTimeout(limit);
      opts.setInput(static_cast<uint8_t*>(const_cast<void*>(send)), bytes_each);
      opts.setOutput(static_cast<uint8_t*>(recv), bytes_each * static_cast<size_t>(launch_.size));
      gloo::allgather(opts);
    }, what);
  }

  // Rank 0 receives a token from every other rank, then lets them all go: it knows which ranks
  // did not come, to name them.
  void meet(const std::string& what) override {
    std::string late;
    run([&] {
      char token = 0;
      auto buffer = context_->createUnboundBuffer(&token, 1);
      if (launch_.rank != 0) {
        buffer->send(0, kArrivedSlot);
        buffer->waitSend(op_timeout());
        buffer->recv(0, kGoSlot);
        buffer->waitRecv(op_timeout());
        return;
      }
      std::vector<int> missing;
      for (int q = 1; q < launch_.size; ++q) missing.push_back(q);
      const auto deadline = Clock::now() + milliseconds(timeout_);
      try {
        while (!missing.empty()) {
          buffer->recv(missing, kArrivedSlot);
          int from = -1;
          buffer->waitRecv(&from, std::max(Milliseconds(1), std::chrono::duration_cast<Milliseconds>(deadline - Clock::now())));
          std::erase(missing, from);
        }
      } catch (const std::exception&) {
        // Gloo may see a dead rank's connection close before the rendezvous does: a moment for it,
        // so that a rank that died is named as gone (and the way on said), not as hanging.
        for (int i = 0; i < 40 && server_->gone().empty(); ++i) std::this_thread::sleep_for(Milliseconds(50));
        if (server_->gone().empty())
          late = fmt::format("rank {} did not reach {} within {:g} s of rank 0 (it hangs or runs far slower): "
                             "stopping every rank",
                             fmt::join(missing, ", rank "), what, timeout_);
        throw;
      }
      for (int q = 1; q < launch_.size; ++q) {
        buffer->send(q, kGoSlot);
        buffer->waitSend(op_timeout());
      }
    }, what, &late);
  }

  [[noreturn]] void abort(int code) override {
    std::fflush(stderr);
    support::abrupt_exit(code);  // the others see this rank's connections close, and stop
  }

 private:
  struct Pending : PendingSum {
    explicit Pending(const Gloo& g) : gloo(g) {}
    void wait() override { gloo.wait(done, "a sum over the ranks", nullptr); }
    const Gloo& gloo;
    std::future<void> done;
  };

  // Where the other ranks reach this one. A rank that reached rank 0 over a loopback address
  // runs on rank 0's machine: it takes the address rank 0 was reached at over the network, if it
  // was (ranks on other machines cannot connect to a loopback address).
  std::string own_address(double timeout) {
    const std::string key = "bertc/rank-0-address";
    if (server_) {
      const std::string address = server_->reached_at();
      client_->set(key, {address.begin(), address.end()});
      return address;
    }
    const std::string mine = client_->local_address();
    if (!is_loopback(mine)) return mine;
    const std::vector<char> rank0 = client_->get(key, timeout);
    return std::string(rank0.begin(), rank0.end());
  }

  // Rank 0, before Gloo connects: says whom it waits for when that takes a while (a WORLD_SIZE
  // left set in a shell makes a lone bertc wait), and names who never came.
  void wait_for_every_rank(double timeout) const {
    const auto start = Clock::now(), deadline = start + milliseconds(timeout);
    bool said = false;
    for (std::vector<int> missing; !(missing = server_->absent()).empty();) {
      if (Clock::now() > deadline)
        throw RankError(
            server_->second_rank0()
                ? fmt::format("rank {} did not join rank 0 at {}:{} within {:g} s, and another process started as rank "
                              "0 too (it found this one holding the port): two processes were given RANK=0. Give each "
                              "rank its own RANK, 0 to {} (torchrun sets it; in a Slurm script, RANK=$SLURM_PROCID)",
                              fmt::join(missing, ", rank "), launch_.address, launch_.port, timeout, launch_.size - 1)
                : fmt::format("rank {} did not join rank 0 at {}:{} within {:g} s: start every rank (RANK 0 to {}) "
                              "with the same MASTER_ADDR and MASTER_PORT, or unset WORLD_SIZE (here {}) to train as "
                              "one process",
                              fmt::join(missing, ", rank "), launch_.address, launch_.port, timeout, launch_.size - 1,
                              launch_.size));
      if (!said && Clock::now() - start > std::chrono::seconds(2)) {
        std::fprintf(stderr, "bertc: rank 0 of %d (%s) waits at port %d for rank %s (up to %g s)\n", launch_.size,
                     launch_.launcher.c_str(), launch_.port, fmt::format("{}", fmt::join(missing, ", ")).c_str(),
                     timeout);
        said = true;
      }
      std::this_thread::sleep_for(Milliseconds(20));
    }
  }

  // Rank 0 gives up first, so that it, which knows who is gone, says it; the others 30 s later.
  Milliseconds op_timeout() const { return milliseconds(launch_.rank == 0 ? timeout_ : timeout_ + 30); }

  std::future<void> submit(std::function<void()> job) {
    std::packaged_task<void()> task(std::move(job));
    std::future<void> done = task.get_future();
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(task));
    }
    ready_.notify_one();
    return done;
  }

  void run(std::function<void()> job, const std::string& what, const std::string* late = nullptr) {
    std::future<void> done = submit(std::move(job));
    wait(done, what, late);
  }

  void work() {
    for (;;) {
      std::packaged_task<void()> task;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [&] { return quit_ || !queue_.empty(); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  // Waits for a job past Gloo's own timeout (which ends it with an error) by a margin; a failure
  // stops this rank, `late` (set by the job) or the rendezvous saying why. A rank whose connection
  // to the rendezvous closed (its process ended) stops the wait at once: Gloo itself notices a
  // closed connection only on the pairs an operation uses.
  void wait(std::future<void>& done, const std::string& what, const std::string* late) const {
    const Milliseconds limit = op_timeout() + Milliseconds(60000);
    const auto deadline = Clock::now() + limit;
    auto pinged = Clock::now();
    while (done.wait_for(Milliseconds(100)) != std::future_status::ready) {
      if (!server_ && Clock::now() - pinged > std::chrono::seconds(1)) {  // "waiting, not hung" (see who_is_missing)
        client_->ping();
        pinged = Clock::now();
      }
      // (A rank that took part and then ended as the run did: its part may still be on the way.)
      if (someone_gone() && done.wait_for(Milliseconds(2000)) != std::future_status::ready)
        stop(fmt::format("{} cannot finish: {}: stopping every rank; {}", what, who_is_missing(), kStartAgain));
      if (Clock::now() > deadline)
        stop(fmt::format("{} did not finish within {:g} s: {}: stopping every rank", what,
                         static_cast<double>(limit.count()) / 1000, who_is_missing()));
    }
    try {
      done.get();
    } catch (const std::exception& e) {
      if (late && !late->empty()) stop(*late);
      // Gloo may see a dead peer's connection close before the rendezvous does: a moment for it.
      for (int i = 0; i < 40 && !someone_gone(); ++i) std::this_thread::sleep_for(Milliseconds(50));
      // A rank gone is gone however long one waits: the way on is a resumed run.
      stop(fmt::format("{} failed: {} ({}{}): stopping every rank{}", what, who_is_missing(), e.what(),
                       someone_gone() ? "" : "; rank_timeout in [train] sets the wait",
                       someone_gone() ? std::string("; ") + kStartAgain : std::string()));
    }
  }

  bool someone_gone() const { return server_ ? !server_->gone().empty() : client_->server_gone(); }

  std::string who_is_missing() const {
    if (server_) {
      const std::vector<int> gone = server_->gone();
      if (!gone.empty())
        return fmt::format("rank {} ended (its connection to rank 0 closed: see its own output)",
                           fmt::join(gone, ", rank "));
      // Waiting ranks ping every second; one silent for 3 s is not waiting.
      const std::vector<int> silent = server_->silent(3);
      if (!silent.empty())
        return fmt::format("rank {} has not been heard from for over 3 s, while the others wait (it hangs, is "
                           "stopped, or runs far slower)",
                           fmt::join(silent, ", rank "));
      return "every rank is still connected and waiting: the network between them fails, or the ranks started "
             "other collectives (a bug: please report it)";
    }
    return client_->server_gone() ? "rank 0 ended or does not answer (see its output)"
                                  : "another rank ended, hangs or runs far slower";
  }

  [[noreturn]] void stop(const std::string& message) const {
    std::fprintf(stderr, "bertc: rank %d of %d: error: %s\n", launch_.rank, launch_.size, message.c_str());
    std::fflush(stderr);
    support::abrupt_exit(1);
  }

  Launch launch_;
  double timeout_;
  std::unique_ptr<TcpStoreServer> server_;  // rank 0's
  std::unique_ptr<TcpStoreClient> client_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::packaged_task<void()>> queue_;
  bool quit_ = false;
  std::thread worker_;
};

}  // namespace

std::unique_ptr<Communicator> gloo_world(const Launch& launch, double timeout_seconds) {
  return std::make_unique<Gloo>(launch, timeout_seconds);
}

std::string gloo_library_version() {
  return fmt::format("Gloo {}.{}.{}", GLOO_VERSION_MAJOR, GLOO_VERSION_MINOR, GLOO_VERSION_PATCH);
}

}  // namespace bertc::distributed

#endif
