// Collectives over MPI (see mpi_communicator.h). Sums are non-blocking MPI calls polled with
// MPI_Test against a deadline, sleeping between polls: on a machine with as many ranks as cores a
// spinning wait would take the core another rank computes on.
#include "distributed/mpi_communicator.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/float16.h"
#include "support/abrupt_exit.h"

#ifdef BERTC_HAVE_MPI
#include <mpi.h>
#endif

namespace bertc::distributed {

#ifndef BERTC_HAVE_MPI

std::unique_ptr<Communicator> mpi_world(double) {
  throw RankError(
      "an MPI launcher started this process, but this bertc was built without MPI (BERTC_MPI off, as the static GPU "
      "test build is): build it with Open MPI (scripts/setup.sh installs libopenmpi-dev) to train on several ranks");
}

std::string mpi_library_version() { return ""; }

#else

namespace {

using Clock = std::chrono::steady_clock;

template <uint16_t (*Round)(float), float (*Widen)(uint16_t)>
void sum_16bit(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = Round(Widen(a[i]) + Widen(b[i]));
}

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int n = 0;
  MPI_Error_string(rc, text, &n);
  throw RankError(fmt::format("{} failed: {}", what, std::string(text, static_cast<size_t>(n))));
}

// A count (bytes or elements) as MPI's int; larger blocks than an int counts are refused, not cut.
int int_count(size_t count) {
  if (count > static_cast<size_t>(INT_MAX))
    throw RankError(fmt::format("a block of {} exceeds what one MPI call moves (an int's count)", count));
  return static_cast<int>(count);
}

constexpr int kArrived = 7101, kGo = 7102, kProbe = 7103, kAlive = 7104;

class Mpi : public Communicator {
 public:
  explicit Mpi(double timeout) : timeout_(timeout) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) check(MPI_Init(nullptr, nullptr), "MPI_Init");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &local_rank_);
    MPI_Comm_free(&local);
    MPI_Op_create(&sum_16bit<ir::f16_bits, ir::from_f16_bits>, 1, &f16_sum_);
    MPI_Op_create(&sum_16bit<ir::bf16_bits, ir::from_bf16_bits>, 1, &bf16_sum_);
  }
  ~Mpi() override {
    MPI_Op_free(&f16_sum_);
    MPI_Op_free(&bf16_sum_);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  std::string describe() const override {
    return fmt::format("{}, {} ranks", mpi_library_version(), size_);
  }

  std::string engine() const override { return "MPI"; }
  void set_timeout(double seconds) override { timeout_ = seconds; }

  std::unique_ptr<PendingSum> start_sum(void* data, size_t count, Element element) override {
    auto pending = std::make_unique<Pending>(*this);
    const auto [type, op] = type_and_op(element);
    auto* bytes = static_cast<char*>(data);
    // MPI counts are ints: a larger buffer goes as several sums.
    for (size_t done = 0; done < count;) {
      const size_t n = std::min<size_t>(count - done, INT_MAX / 2);
      MPI_Request r;
      check(MPI_Iallreduce(MPI_IN_PLACE, bytes + done * element_bytes(element), static_cast<int>(n), type, op,
                           MPI_COMM_WORLD, &r),
            "MPI_Iallreduce");
      pending->requests.push_back(r);
      done += n;
    }
    return pending;
  }

  std::vector<uint64_t> all_gather(uint64_t value, const std::string& what) override {
    std::vector<uint64_t> all(static_cast<size_t>(size_));
    std::vector<MPI_Request> r(1);
    check(MPI_Iallgather(&value, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD, &r[0]), "MPI_Iallgather");
    wait(r, [&] { return late(what); }, true);
    return all;
  }

  void broadcast(void* data, size_t bytes, int root, const std::string& what) override {
    std::vector<MPI_Request> r;
    auto* at = static_cast<char*>(data);
    for (size_t done = 0; done < bytes;) {  // (MPI counts are ints)
      const size_t n = std::min<size_t>(bytes - done, INT_MAX / 2);
      r.emplace_back();
      check(MPI_Ibcast(at + done, static_cast<int>(n), MPI_BYTE, root, MPI_COMM_WORLD, &r.back()), "MPI_Ibcast");
      done += n;
    }
    wait(r, [&] { return late(what); }, true);
  }

  // (MPI counts and displacements are ints: every gradient's elements together must fit one, as
  // BERT-large's 336M do; Open MPI adds the counts up in an int)
  void reduce_scatter(float* data, const std::vector<size_t>& counts, const std::string& what) override {
    int_count(std::accumulate(counts.begin(), counts.end(), size_t{0}));
    std::vector<int> n;
    for (size_t c : counts) n.push_back(int_count(c));
    std::vector<float> mine(std::max<size_t>(1, counts[static_cast<size_t>(rank_)]));  // (a share of none: a real buffer)
    std::vector<MPI_Request> r(1);
    check(MPI_Ireduce_scatter(data, mine.data(), n.data(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r[0]), "MPI_Ireduce_scatter");
    wait(r, [&] { return late(what); }, true);
    std::copy_n(mine.begin(), counts[static_cast<size_t>(rank_)],
                data + std::accumulate(counts.begin(), counts.begin() + rank_, size_t{0}));
  }

  void all_gather_shares(float* data, const std::vector<size_t>& counts, const std::string& what) override {
    int_count(std::accumulate(counts.begin(), counts.end(), size_t{0}));  // (the displacements below fit then)
    std::vector<int> n, at;
    for (size_t c : counts) {
      at.push_back(at.empty() ? 0 : at.back() + n.back());
      n.push_back(int_count(c));
    }
    std::vector<MPI_Request> r(1);
    // (in place: each rank's own share is where the others' land)
    check(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, n.data(), at.data(), MPI_FLOAT, MPI_COMM_WORLD, &r[0]),
          "MPI_Iallgatherv");
    wait(r, [&] { return late(what); }, true);
  }

  // (MPI counts are ints: 1-bit compression's blocks of BERT-large are ~5 MB, far below)
  void all_to_all(const void* send, void* recv, size_t bytes_each, const std::string& what) override {
    std::vector<MPI_Request> r(1);
    check(MPI_Ialltoall(send, int_count(bytes_each), MPI_BYTE, recv, int_count(bytes_each), MPI_BYTE, MPI_COMM_WORLD,
                        &r[0]),
          "MPI_Ialltoall");
    wait(r, [&] { return late(what); }, true);
  }

  void all_gather_bytes(const void* send, void* recv, size_t bytes_each, const std::string& what) override {
    std::vector<MPI_Request> r(1);
    check(MPI_Iallgather(send, int_count(bytes_each), MPI_BYTE, recv, int_count(bytes_each), MPI_BYTE, MPI_COMM_WORLD,
                         &r[0]),
          "MPI_Iallgather");
    wait(r, [&] { return late(what); }, true);
  }

  void meet(const std::string& what) override {
    char token = 0, go = 0;
    if (rank_ != 0) {
      std::vector<MPI_Request> r(2);
      check(MPI_Isend(&token, 1, MPI_BYTE, 0, kArrived, MPI_COMM_WORLD, &r[0]), "MPI_Isend");
      check(MPI_Irecv(&go, 1, MPI_BYTE, 0, kGo, MPI_COMM_WORLD, &r[1]), "MPI_Irecv");
      wait(r, [&] { return fmt::format("rank 0 did not let {} begin within {:g} s (it died or hangs): stopping every rank",
                                       what, timeout_ + 30); }, false);
      return;
    }
    std::vector<char> tokens(static_cast<size_t>(size_));
    std::vector<MPI_Request> arrivals(static_cast<size_t>(size_ - 1));
    for (int q = 1; q < size_; ++q)
      check(MPI_Irecv(&tokens[q], 1, MPI_BYTE, q, kArrived, MPI_COMM_WORLD, &arrivals[q - 1]), "MPI_Irecv");
    wait(arrivals, [&] {
      std::vector<int> missing;
      for (int q = 1; q < size_; ++q) {
        int done = 0;
        MPI_Test(&arrivals[q - 1], &done, MPI_STATUS_IGNORE);
        if (!done) missing.push_back(q);
      }
      if (missing.empty()) return std::string();  // they all came just now
      return fmt::format("rank {} did not reach {} within {:g} s of rank 0 (it died, hangs or runs far slower): "
                         "stopping every rank",
                         fmt::join(missing, ", rank "), what, timeout_);
    }, false);
    std::vector<MPI_Request> gos(static_cast<size_t>(size_ - 1));
    for (int q = 1; q < size_; ++q)
      check(MPI_Isend(&go, 1, MPI_BYTE, q, kGo, MPI_COMM_WORLD, &gos[q - 1]), "MPI_Isend");
    wait(gos, [&] { return late(what); }, true);
  }

  [[noreturn]] void abort(int code) override {
    support::empty_registered_files();  // (the run lock: MPI_Abort may end this process itself)
    MPI_Abort(MPI_COMM_WORLD, code);
    std::exit(code);
  }

 private:
  struct Pending : PendingSum {
    explicit Pending(const Mpi& m) : mpi(m) {}
    void wait() override { mpi.wait(requests, [&] { return mpi.late("a sum over the ranks"); }, true); }
    const Mpi& mpi;
    std::vector<MPI_Request> requests;
  };

  // Polls `requests` to completion. Rank 0 gives up after the timeout (`probing`: less the time
  // late() then spends asking the others, so that the whole wait stays within it), the others
  // 30 s later (so that rank 0, which can find out who is missing, says it first), answering rank
  // 0's probes meanwhile. Giving up — late() says why; an empty answer: nothing is missing after
  // all, wait on — stops every rank at once (MPI_Abort), without unwinding: buffers of sums still
  // in flight must not be freed under MPI.
  void wait(std::vector<MPI_Request>& requests, const std::function<std::string()>& late, bool probing) const {
    const double limit = rank_ == 0 ? timeout_ - (probing ? probe_seconds() : 0) : timeout_ + 30;
    const auto deadline = Clock::now() + std::chrono::duration<double>(limit);
    int polls = 0;
    for (;;) {
      int done = 0;
      if (MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS)
        stop("an MPI transfer failed (a rank died?): stopping every rank");
      if (done) return;
      if (Clock::now() > deadline)
        if (const std::string why = late(); !why.empty()) stop(why);
      if (rank_ != 0) answer_probes();
      // Spin briefly (a sum of a small bucket takes microseconds), then sleep up to a millisecond.
      if (++polls > 64) std::this_thread::sleep_for(std::chrono::microseconds(std::min(1000, 10 * (polls - 64))));
    }
  }

  [[noreturn]] void stop(const std::string& message) const {
    std::fprintf(stderr, "bertc: rank %d of %d: error: %s\n", rank_, size_, message.c_str());
    std::fflush(stderr);
    support::empty_registered_files();  // (the run lock: MPI_Abort may end this process itself)
    MPI_Abort(MPI_COMM_WORLD, 1);
    support::abrupt_exit(1);
  }

  std::string late(const std::string& what) const {
    std::string who = "another rank died or hangs";
    if (rank_ == 0) {
      const std::vector<int> silent = unanswered();
      who = silent.empty() ? "every rank answers, so one runs far slower or MPI is stuck"
                           : fmt::format("rank {} does not answer (it died or hangs)", fmt::join(silent, ", rank "));
    }
    return fmt::format("{} did not finish within {:g} s: {} (rank_timeout in [train] sets the wait; at start-up a "
                       "rank may still be compiling kernels): stopping every rank",
                       what, rank_ == 0 ? timeout_ : timeout_ + 30, who);
  }

  // How long rank 0 asks the others whether they are there: part of the timeout.
  double probe_seconds() const { return std::min(5.0, timeout_ / 4); }

  // A rank other than 0, waiting: answers rank 0's "are you there?".
  void answer_probes() const {
    int flag = 0;
    MPI_Iprobe(0, kProbe, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    if (!flag) return;
    char token = 0;
    MPI_Recv(&token, 1, MPI_BYTE, 0, kProbe, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Request r;
    MPI_Isend(&token, 1, MPI_BYTE, 0, kAlive, MPI_COMM_WORLD, &r);
    MPI_Request_free(&r);
  }

  // Rank 0, after a wait ran out: the ranks that do not answer within probe_seconds().
  std::vector<int> unanswered() const {
    std::vector<char> tokens(static_cast<size_t>(size_));
    std::vector<MPI_Request> asks(static_cast<size_t>(size_ - 1)), answers(static_cast<size_t>(size_ - 1));
    for (int q = 1; q < size_; ++q) {
      MPI_Isend(&tokens[0], 1, MPI_BYTE, q, kProbe, MPI_COMM_WORLD, &asks[q - 1]);
      MPI_Irecv(&tokens[q], 1, MPI_BYTE, q, kAlive, MPI_COMM_WORLD, &answers[q - 1]);
    }
    const auto deadline = Clock::now() + std::chrono::duration<double>(probe_seconds());
    std::vector<int> silent;
    while (Clock::now() < deadline) {
      silent.clear();
      for (int q = 1; q < size_; ++q) {
        int done = 0;
        MPI_Test(&answers[q - 1], &done, MPI_STATUS_IGNORE);
        if (!done) silent.push_back(q);
      }
      if (silent.empty()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return silent;  // (the run stops next: the requests left are abandoned with it)
  }

  std::pair<MPI_Datatype, MPI_Op> type_and_op(Element e) const {
    switch (e) {
      case Element::F32: return {MPI_FLOAT, MPI_SUM};
      case Element::F64: return {MPI_DOUBLE, MPI_SUM};
      case Element::I64: return {MPI_INT64_T, MPI_SUM};
      case Element::F16: return {MPI_UINT16_T, f16_sum_};
      case Element::Bf16: return {MPI_UINT16_T, bf16_sum_};
    }
    throw std::logic_error("unknown element");
  }

  double timeout_;
  int rank_ = 0, size_ = 1, local_rank_ = 0;
  MPI_Op f16_sum_, bf16_sum_;
};

}  // namespace

std::unique_ptr<Communicator> mpi_world(double timeout_seconds) { return std::make_unique<Mpi>(timeout_seconds); }

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int n = 0;
  MPI_Get_library_version(text, &n);
  std::string s(text, static_cast<size_t>(n));
  return s.substr(0, s.find(','));  // "Open MPI v4.1.4"
}

#endif

}  // namespace bertc::distributed
