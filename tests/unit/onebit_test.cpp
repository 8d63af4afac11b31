// 1-bit compression (distributed/onebit): a block compressed by hand, error feedback's running mean
// (and its absence caught), the ranks' compressed average on three ranks as threads of this
// process, the momentum exchange's identity the optimizer relies on, and its checkpoint state
// restored exactly on as many ranks and spread over fewer.
#include <barrier>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include "distributed/communicator.h"
#include "distributed/gradient_exchange.h"
#include "distributed/onebit.h"

namespace bertc::distributed {
namespace {

std::vector<float> random_vector(size_t n, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(g);
  return v;
}

TEST(OneBit, ABlockTravelsAsItsSignsAndMeanMagnitude) {
  // 3 at even places, -1 at odd ones: mean |x| 2, so +2 and -2 come out, and the error is +1 each.
  std::vector<float> x(kOneBitBlock), error(kOneBitBlock, 0.0f), out(kOneBitBlock, 0.0f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = i % 2 ? -1.0f : 3.0f;
  std::vector<uint8_t> packed(onebit_bytes(kOneBitBlock));
  EXPECT_EQ(packed.size(), kOneBitBlock / 8 + 4);
  onebit_compress(x.data(), error.data(), kOneBitBlock, packed.data(), kOneBitBlock);
  onebit_decompress_add(packed.data(), kOneBitBlock, 1.0f, out.data());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(out[i], i % 2 ? -2.0f : 2.0f) << i;
    ASSERT_EQ(error[i], 1.0f) << i;
  }
  // The error goes into the next vector: x again is compressed as x + 1 (4 and 0: mean 2, and
  // 0 counts as positive).
  std::fill(out.begin(), out.end(), 0.0f);
  onebit_compress(x.data(), error.data(), kOneBitBlock, packed.data(), kOneBitBlock);
  onebit_decompress_add(packed.data(), kOneBitBlock, 1.0f, out.data());
  EXPECT_EQ(out[0], 2.0f);
  EXPECT_EQ(out[1], 2.0f);
  EXPECT_THROW(onebit_compress(x.data(), error.data(), kOneBitBlock - 1, packed.data(), kOneBitBlock - 1),
               std::invalid_argument);
  // Padding (here all but the first 8 elements) is left out of the mean: the real ones keep their size.
  std::vector<float> few(kOneBitBlock, 0.0f), none(kOneBitBlock, 0.0f);
  for (size_t i = 0; i < 8; ++i) few[i] = 5.0f;
  std::fill(out.begin(), out.end(), 0.0f);
  onebit_compress(few.data(), none.data(), kOneBitBlock, packed.data(), 8);
  onebit_decompress_add(packed.data(), kOneBitBlock, 1.0f, out.data());
  EXPECT_EQ(out[0], 5.0f);
  EXPECT_EQ(none[0], 0.0f);
}

// Error feedback's promise: what was sent over T rounds plus the error left equals what was given
// (the error telescopes), so nothing is lost, only late. Without it the difference stays.
TEST(OneBit, ErrorFeedbackLosesNothing) {
  const size_t n = 2 * kOneBitBlock;
  const int rounds = 200;
  auto worst_loss = [&](bool feedback) {
    std::vector<float> error(n, 0.0f), sent(n, 0.0f);
    std::vector<double> given(n, 0.0), total(n, 0.0);
    std::vector<uint8_t> packed(onebit_bytes(n));
    for (int t = 0; t < rounds; ++t) {
      const std::vector<float> x = random_vector(n, 1000 + t);
      if (!feedback) std::fill(error.begin(), error.end(), 0.0f);
      onebit_compress(x.data(), error.data(), n, packed.data(), n);
      std::fill(sent.begin(), sent.end(), 0.0f);
      onebit_decompress_add(packed.data(), n, 1.0f, sent.data());
      for (size_t i = 0; i < n; ++i) given[i] += x[i], total[i] += sent[i];
    }
    double worst = 0;
    for (size_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(total[i] + error[i] - given[i]));
    return worst;
  };
  // Each round rounds c = x + e and e = c - sent in float (|c| of a few units: 1e-6 each); 200
  // rounds: 1e-3 at most.
  EXPECT_LT(worst_loss(true), 1e-3);
  EXPECT_GT(worst_loss(false), 1.0);  // an element of 0.1 sent as +-0.8 for 200 rounds
}

// Ranks as threads of one process: the byte collectives through a shared table and a barrier.
struct ThreadGroup {
  explicit ThreadGroup(int n) : size(n), sync(n), sends(static_cast<size_t>(n)) {}
  int size;
  std::barrier<> sync;
  std::vector<const void*> sends;
};

class ThreadRank : public Communicator {
 public:
  ThreadRank(ThreadGroup& group, int rank) : g_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return g_.size; }
  int local_rank() const override { return rank_; }
  std::string describe() const override { return "threads"; }
  std::string engine() const override { return "threads"; }
  void set_timeout(double) override {}
  std::unique_ptr<PendingSum> start_sum(void*, size_t, Element) override { throw std::logic_error("no sums here"); }
  std::vector<uint64_t> all_gather(uint64_t, const std::string&) override { throw std::logic_error("no gather here"); }
  void meet(const std::string&) override { g_.sync.arrive_and_wait(); }
  [[noreturn]] void abort(int) override { std::abort(); }
  void broadcast(void* data, size_t bytes, int root, const std::string&) override {
    exchange(data, [&] {
      if (rank_ != root) std::memcpy(data, g_.sends[static_cast<size_t>(root)], bytes);
    });
  }
  void reduce_scatter(float*, const std::vector<size_t>&, const std::string&) override { throw std::logic_error("no ZeRO here"); }
  void all_gather_shares(float*, const std::vector<size_t>&, const std::string&) override { throw std::logic_error("no ZeRO here"); }
  void all_to_all(const void* send, void* recv, size_t bytes_each, const std::string&) override {
    exchange(send, [&] {
      for (int r = 0; r < g_.size; ++r)
        std::memcpy(static_cast<char*>(recv) + r * bytes_each,
                    static_cast<const char*>(g_.sends[static_cast<size_t>(r)]) + rank_ * bytes_each, bytes_each);
    });
  }
  void all_gather_bytes(const void* send, void* recv, size_t bytes_each, const std::string&) override {
    exchange(send, [&] {
      for (int r = 0; r < g_.size; ++r)
        std::memcpy(static_cast<char*>(recv) + r * bytes_each, g_.sends[static_cast<size_t>(r)], bytes_each);
    });
  }

 private:
  // Every rank posts its buffer, reads the others', and waits until all have read.
  void exchange(const void* mine, const std::function<void()>& read) {
    g_.sends[static_cast<size_t>(rank_)] = mine;
    g_.sync.arrive_and_wait();
    read();
    g_.sync.arrive_and_wait();
  }
  ThreadGroup& g_;
  int rank_;
};

// Runs body(rank's communicator) on `ranks` threads.
void on_ranks(int ranks, const std::function<void(Communicator&)>& body) {
  ThreadGroup group(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      ThreadRank comm(group, r);
      body(comm);
    });
  for (std::thread& t : threads) t.join();
}

// Three ranks: every rank gets the same vector, and over the rounds the two compressions lose
// nothing: what came out plus the worker errors' mean and the server error of each part is the
// ranks' mean given.
TEST(OneBitAverage, RanksAgreeAndTheAverageLosesNothing) {
  // 5000 elements over 3 ranks: parts of one block (2048) each, the last 1144 padding.
  const size_t n = 5000;
  const int ranks = 3, rounds = 100;
  std::vector<std::vector<double>> given(ranks, std::vector<double>(n, 0.0)), out(ranks, std::vector<double>(n, 0.0));
  std::vector<std::vector<float>> last(ranks), worker(ranks), server(ranks);
  std::vector<uint64_t> bytes(ranks);
  on_ranks(ranks, [&](Communicator& comm) {
    const auto r = static_cast<size_t>(comm.rank());
    OneBitAverage average(n, ranks);
    for (int t = 0; t < rounds; ++t) {
      std::vector<float> v = random_vector(n, 100 * t + r);
      for (size_t i = 0; i < n; ++i) given[r][i] += v[i];
      bytes[r] = average.average(comm, v.data());
      for (size_t i = 0; i < n; ++i) out[r][i] += v[i];
      last[r] = std::move(v);
    }
    worker[r] = average.worker_error();
    server[r] = average.server_error();
  });
  EXPECT_EQ(bytes[0], 3u * (2048 / 8 + 4));
  for (int r = 1; r < ranks; ++r) EXPECT_EQ(std::memcmp(last[r].data(), last[0].data(), n * sizeof(float)), 0) << r;
  double worst = 0;
  for (size_t i = 0; i < n; ++i) {
    const double mean_given = (given[0][i] + given[1][i] + given[2][i]) / 3;
    const double mean_worker = (double(worker[0][i]) + worker[1][i] + worker[2][i]) / 3;
    worst = std::max(worst, std::fabs(out[0][i] + mean_worker + server[i / 2048][i % 2048] - mean_given));
  }
  // Float rounding of each round's c = x + e and e = c - sent, twice, |c| of a few units: 100
  // rounds stay below 1e-3.
  EXPECT_LT(worst, 1e-3);
}

ExchangeOptions onebit(int64_t warmup) {
  ExchangeOptions o;
  o.compression = Compression::OneBit;
  o.onebit_warmup_steps = warmup;
  o.beta1 = 0.9;
  return o;
}

// What the optimizer relies on: the momentum it is given is beta1 m + (1 - beta1) x the mean of
// the gradient sums it is given (its update reads the former, its norm the latter).
TEST(GradientExchange, OneBitMomentumAndGradientsAgree) {
  const std::vector<GradientTensor> tensors = {{"w", {40, 100}}, {"b", {100}}};
  const int ranks = 2;
  const double k = 4;  // micro-batches a rank sums
  on_ranks(ranks, [&](Communicator& comm) {
    GradientExchange e(comm, tensors, onebit(3));
    EXPECT_FALSE(e.exchanges_momentum(3));
    EXPECT_TRUE(e.exchanges_momentum(4));
    std::vector<float> w = random_vector(4000, 1 + comm.rank()), b = random_vector(100, 3 + comm.rank());
    std::vector<float> mw = random_vector(4000, 5), mb = random_vector(100, 6);  // the same on both ranks
    const std::vector<float> old_mw = mw, old_mb = mb;
    // Frozen variances, the same on both ranks: the momentum travels divided by sqrt(v / c2) + eps.
    std::vector<float> vw = random_vector(4000, 7), vb(100, 1.0f);
    for (float& v : vw) v = 0.5f + v * v;
    const std::vector<const float*> variances = {vw.data(), vb.data()};
    EXPECT_THROW(e.exchange_momentum({w.data(), b.data()}, {mw.data(), mb.data()}, variances, 1 / k, 3), std::logic_error);
    EXPECT_THROW(e.exchange({w.data(), b.data()}, 4), std::logic_error);
    const ExchangeResult r = e.exchange_momentum({w.data(), b.data()}, {mw.data(), mb.data()}, variances, 1 / k, 4);
    EXPECT_TRUE(r.compressed);
    EXPECT_TRUE(r.finite);
    EXPECT_EQ(r.bytes, compressed_bytes_of(tensors, onebit(3), ranks));
    EXPECT_EQ(r.bytes, 2u * 2 * (2048 / 8 + 4));  // 4100 elements: 2050 a rank, two blocks
    // The optimizer's mean gradient is the sums / (ranks x k); float rounding of terms of a few
    // units: 1e-5.
    for (size_t i = 0; i < 4000; ++i)
      ASSERT_NEAR(0.9 * old_mw[i] + 0.1 * w[i] / (ranks * k), mw[i], 1e-5) << i;
    for (size_t i = 0; i < 100; ++i) ASSERT_NEAR(0.9 * old_mb[i] + 0.1 * b[i] / (ranks * k), mb[i], 1e-5) << i;
  });
  ExchangeOptions o = onebit(3);
  EXPECT_EQ(compressed_bytes_of({{"w", {64, 32}}, {"b", {32}}}, o, 2), 2u * 260);   // 2080 elements: a block a rank
  EXPECT_EQ(compressed_bytes_of({{"w", {64, 32}}, {"b", {32}}}, o, 1), 1u * 520);   // two blocks on one
}

// Saved by 3 ranks and restored on 3, the exchanges go on exactly as without the stop; on 2 the
// worker errors are spread and the log says so; another model's state is refused by its size.
TEST(GradientExchange, OneBitStateResumesExactlyOnAsManyRanks) {
  const std::vector<GradientTensor> tensors = {{"w", {30, 100}}, {"b", {100}}};
  const std::vector<float> vw(3100, 0.04f), vb(100, 0.01f);  // (the w of another shape reads 3100)
  auto run = [&](int ranks, const ir::Environment<float>* restore, int steps, std::vector<std::vector<float>>* out,
                 ir::Environment<float>* saved, std::string* said, const std::vector<GradientTensor>& shapes) {
    on_ranks(ranks, [&](Communicator& comm) {
      GradientExchange e(comm, shapes, onebit(1));
      if (restore) {
        const std::string line = e.restore_state(comm.rank() == 0 ? *restore : ir::Environment<float>{});
        if (comm.rank() == 0) *said = line;
      }
      std::vector<float> w, b;
      const size_t n = static_cast<size_t>(shapes[0].shape[0] * shapes[0].shape[1]);
      for (int s = 1; s <= steps; ++s) {
        w = random_vector(n, 10 * s + comm.rank());
        b = random_vector(100, 10 * s + 5 + comm.rank());
        std::vector<float> mw(n, 0.1f), mb(100, -0.1f);
        e.exchange_momentum({w.data(), b.data()}, {mw.data(), mb.data()}, {vw.data(), vb.data()}, 1.0, s + 1);
        if (comm.rank() == 0 && out) out->push_back(mw);
      }
      ir::Environment<float> state = e.saved_state();
      if (comm.rank() == 0 && saved) *saved = std::move(state);
    });
  };
  std::vector<std::vector<float>> straight, first, second;
  ir::Environment<float> at3, unused;
  std::string said;
  run(3, nullptr, 6, &straight, nullptr, nullptr, tensors);
  run(3, nullptr, 3, &first, &at3, nullptr, tensors);
  EXPECT_EQ(at3.size(), 5u);  // 3 worker errors, the server errors, the element count
  // The state's gradients differ by step (seeded by s): rerun steps 4-6 from the saved state.
  on_ranks(3, [&](Communicator& comm) {
    GradientExchange e(comm, tensors, onebit(1));
    const std::string line = e.restore_state(comm.rank() == 0 ? at3 : ir::Environment<float>{});
    if (comm.rank() == 0) said = line;
    for (int s = 4; s <= 6; ++s) {
      std::vector<float> w = random_vector(3000, 10 * s + comm.rank()), b = random_vector(100, 10 * s + 5 + comm.rank());
      std::vector<float> mw(3000, 0.1f), mb(100, -0.1f);
      e.exchange_momentum({w.data(), b.data()}, {mw.data(), mb.data()}, {vw.data(), vb.data()}, 1.0, s + 1);
      if (comm.rank() == 0) second.push_back(mw);
    }
  });
  EXPECT_EQ(said, "1-bit: error feedback of 3 rank(s) from the checkpoint");
  for (int s = 0; s < 3; ++s) { for (size_t i = 0; i < second[s].size(); ++i) if (second[s][i] != straight[3 + s][i]) { ADD_FAILURE() << "step " << 4 + s << " element " << i << ": " << second[s][i] << " vs " << straight[3 + s][i]; break; } }
  // Steps 4-6 without the state differ (else the test above shows nothing).
  std::vector<std::vector<float>> fresh;
  on_ranks(3, [&](Communicator& comm) {
    GradientExchange e(comm, tensors, onebit(1));
    for (int s = 4; s <= 6; ++s) {
      std::vector<float> w = random_vector(3000, 10 * s + comm.rank()), b = random_vector(100, 10 * s + 5 + comm.rank());
      std::vector<float> mw(3000, 0.1f), mb(100, -0.1f);
      e.exchange_momentum({w.data(), b.data()}, {mw.data(), mb.data()}, {vw.data(), vb.data()}, 1.0, s + 1);
      if (comm.rank() == 0) fresh.push_back(mw);
    }
  });
  for (int s = 0; s < 3; ++s) EXPECT_NE(fresh[s], straight[3 + s]) << "step " << 4 + s;
  run(2, &at3, 1, nullptr, nullptr, &said, tensors);
  EXPECT_EQ(said, "1-bit: the checkpoint's error feedback was saved by 3 rank(s): each of these 2 takes their mean "
                  "worker error, and the server error is cut into 2 parts");
  run(2, &at3, 1, nullptr, nullptr, &said, {{"w", {31, 100}}, {"b", {100}}});
  EXPECT_EQ(said, "1-bit: the checkpoint's error feedback is of another model (3100 elements, this one 3200): it starts "
                  "at zero");
  run(2, &unused, 1, nullptr, nullptr, &said, tensors);
  EXPECT_EQ(said, "1-bit: the checkpoint holds no 1-bit error feedback (saved without it): it starts at zero");
}

}  // namespace
}  // namespace bertc::distributed
