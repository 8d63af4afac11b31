// distributed/: the launcher's environment, PowerSGD's algebra and error feedback, the gradient exchange's
// buckets and 16-bit rounding — on one process (the sums over ranks are the identity there; the
// 2-rank behaviour is tests/distributed/dp_test.py's, under mpirun).
#include <cmath>
#include <cstdlib>
#include <random>

#include <gtest/gtest.h>

#include "distributed/communicator.h"
#include "distributed/gradient_exchange.h"
#include "distributed/powersgd.h"
#include "ir/float16.h"
#include "refusal.h"
#include "scoped_env.h"

namespace bertc::distributed {
namespace {

std::vector<float> random_matrix(int64_t n, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<float> m(static_cast<size_t>(n));
  for (float& x : m) x = static_cast<float>(static_cast<double>(g() >> 11) * 0x1.0p-53 - 0.5);
  return m;
}

TEST(PowerSgd, OrthonormalizesColumnsAndZeroesAnEmptyOne) {
  const int64_t rows = 6, r = 3;
  std::vector<float> p = random_matrix(rows * r, 1);
  for (int64_t i = 0; i < rows; ++i) p[i * r + 2] = 2 * p[i * r + 0];  // column 2 parallel to column 0
  orthonormalize_columns(p.data(), rows, r);
  auto dot = [&](int64_t a, int64_t b) {
    double d = 0;
    for (int64_t i = 0; i < rows; ++i) d += double(p[i * r + a]) * p[i * r + b];
    return d;
  };
  // Float columns of 6 elements: products exact to ~1e-7; 1e-5 allows the subtraction steps.
  EXPECT_NEAR(dot(0, 0), 1, 1e-5);
  EXPECT_NEAR(dot(1, 1), 1, 1e-5);
  EXPECT_NEAR(dot(0, 1), 0, 1e-5);
  // Nothing of column 2 is left once column 0 is taken out: zero, not NaN (a parallel column leaves
  // rounding noise only, which normalizing must not blow up into a unit vector of noise).
  for (int64_t i = 0; i < rows; ++i) EXPECT_EQ(p[i * r + 2], 0.0f);
}

TEST(PowerSgd, RecoversALowRankMatrixExactly) {
  // M = u v^T (rank 1) compressed at rank 2: P = M Q spans u, so P Q^T after the second product is M.
  const int64_t n = 8, m = 5;
  const std::vector<float> u = random_matrix(n, 2), v = random_matrix(m, 3);
  std::vector<float> g(static_cast<size_t>(n * m));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < m; ++k) g[i * m + k] = u[i] * v[k];
  const std::vector<float> want = g;
  PowerSgd p({{n, m}}, 2, 7);
  auto one = single_process();
  const uint64_t bytes = p.exchange(*one, {g.data()});
  EXPECT_EQ(bytes, (n + m) * 2 * sizeof(float));
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], 1e-6) << i;  // float products of 0.25-sized terms
}

TEST(PowerSgd, ErrorFeedbackLosesNothingOverSteps) {
  // A full-rank gradient at rank 1: each step sends an approximation and keeps the rest as error
  // (output_t + E_t = G_t + E_{t-1}), so the outputs of all steps plus the last error add up to
  // the gradients given, while each output alone is far from its gradient.
  const int64_t n = 6, m = 4, steps = 5;
  PowerSgd p({{n, m}}, 1, 9);
  auto one = single_process();
  std::vector<double> sent(static_cast<size_t>(n * m), 0.0), given(static_cast<size_t>(n * m), 0.0);
  double largest_single_loss = 0;
  for (int64_t s = 0; s < steps; ++s) {
    std::vector<float> g = random_matrix(n * m, 100 + static_cast<uint64_t>(s));
    const std::vector<float> before = g;
    for (size_t i = 0; i < g.size(); ++i) given[i] += g[i];
    p.exchange(*one, {g.data()});
    for (size_t i = 0; i < g.size(); ++i) {
      sent[i] += g[i];
      largest_single_loss = std::max(largest_single_loss, std::abs(double(before[i]) - g[i]));
    }
  }
  const std::vector<float>& error = p.error(0);
  // Five float additions of values below 1 per element: 1e-5 is a hundred roundings.
  for (size_t i = 0; i < given.size(); ++i) EXPECT_NEAR(sent[i] + error[i], given[i], 1e-5) << i;
  EXPECT_GT(largest_single_loss, 0.05);  // rank 1 of a random 6 x 4 matrix does lose something
}

TEST(GradientExchange, BucketsKeepOrderAndSize) {
  auto one = single_process();
  ExchangeOptions o;
  o.bucket_bytes = 100;  // 25 floats
  GradientExchange e(*one, {{"a", {10}}, {"b", {10}}, {"c", {30}}, {"d", {2}}, {"e", {3}}}, o);
  const std::vector<std::vector<size_t>> want = {{0, 1}, {2}, {3, 4}};
  EXPECT_EQ(e.buckets(), want);
  EXPECT_EQ(e.dense_bytes(), 55u * 4);
}

TEST(GradientExchange, Fp16AndBf16RoundEveryValueAndHalveTheBytes) {
  auto one = single_process();
  for (Compression c : {Compression::Fp16, Compression::Bf16}) {
    ExchangeOptions o;
    o.compression = c;
    GradientExchange e(*one, {{"w", {4, 3}}}, o);
    std::vector<float> g = random_matrix(12, 5), original = g;
    const ExchangeResult r = e.exchange({g.data()}, 1);
    EXPECT_EQ(r.bytes, 12u * 2);
    EXPECT_TRUE(r.compressed);
    EXPECT_TRUE(r.finite);
    for (size_t i = 0; i < g.size(); ++i) {
      const float want = c == Compression::Fp16 ? ir::from_f16_bits(ir::f16_bits(original[i]))
                                                : ir::from_bf16_bits(ir::bf16_bits(original[i]));
      EXPECT_EQ(g[i], want) << ir::enum_name(c) << " " << i;
    }
  }
}

TEST(GradientExchange, Fp16OverflowIsReportedNotHidden) {
  auto one = single_process();
  ExchangeOptions o;
  o.compression = Compression::Fp16;
  GradientExchange e(*one, {{"w", {2}}}, o);
  std::vector<float> g = {1e6f, 1.0f};  // beyond fp16's 65504
  EXPECT_FALSE(e.exchange({g.data()}, 1).finite);
}

// PowerSGD's exchange options: factors of `rank`, `warmup` uncompressed steps first.
ExchangeOptions powersgd(int64_t rank, int64_t warmup) {
  ExchangeOptions o;
  o.compression = Compression::PowerSgd;
  o.powersgd_rank = rank;
  o.powersgd_warmup_steps = warmup;
  return o;
}

TEST(GradientExchange, PowerSgdWarmsUpUncompressedAndLeavesSmallTensors) {
  auto one = single_process();
  const ExchangeOptions o = powersgd(1, 2);
  // A 64 x 32 matrix (factors 96 of 2048 floats: compressed) and a bias (left as it is).
  GradientExchange e(*one, {{"w", {64, 32}}, {"b", {32}}}, o);
  std::vector<float> w = random_matrix(64 * 32, 1), b = random_matrix(32, 2);
  const ExchangeResult warm = e.exchange({w.data(), b.data()}, 2);
  EXPECT_FALSE(warm.compressed);
  EXPECT_EQ(warm.bytes, 4u + (64 * 32 + 32) * 4);  // the finiteness flag, then everything in fp32
  const ExchangeResult after = e.exchange({w.data(), b.data()}, 3);
  EXPECT_TRUE(after.compressed);
  EXPECT_EQ(after.bytes, 4u + 32 * 4 + (64 + 32) * 1 * 4);
  EXPECT_EQ(e.compressed_bytes(), after.bytes);  // what bertc estimate counts
  EXPECT_EQ(compressed_bytes_of({{"w", {64, 32}}, {"b", {32}}}, o, 1), after.bytes);  // (from the shapes alone)
  EXPECT_NE(e.compression_summary().find("PowerSGD rank 1 compresses 1 of the 2 gradients; 1"), std::string::npos)
      << e.compression_summary();
}

// bertc estimate's latency term: each collective's ring steps on 4 ranks, worked by hand. Buckets
// of 1 KiB over tensors of 1024, 512, 512 and 256 bytes: [1024], [512, 512], [256].
TEST(GradientExchange, LatencyHopsCountEveryCollectiveOfAStep) {
  const std::vector<GradientTensor> tensors = {{"w", {64, 4}}, {"a", {128}}, {"b", {128}}, {"c", {64}}};
  ExchangeOptions o;
  o.bucket_bytes = 1024;
  EXPECT_EQ(latency_hops_of(tensors, o, 4), 3u * 6);  // three buckets' sums, 2 (N-1) = 6 steps each
  o.compression = Compression::Bf16;
  EXPECT_EQ(latency_hops_of(tensors, o, 4), 3u * 6);  // (the same buckets, of 16-bit shares)
  o.compression = Compression::OneBit;
  EXPECT_EQ(latency_hops_of(tensors, o, 4), 2u * 3);  // an all-to-all and an all-gather, N-1 = 3 each
  o.max_grad_norm = 1;
  EXPECT_EQ(latency_hops_of(tensors, o, 4), 2u * 3 + 6);  // and the clipping's one number summed
  // PowerSGD at rank 1 compresses w (factors 64 + 4 floats: 68 <= 0.5 x 256); the vectors stay
  // dense in two buckets ([a, b] then [c]); the flag's sum and the two factors' sums besides.
  o = powersgd(1, 2);
  o.bucket_bytes = 1024;
  EXPECT_EQ(latency_hops_of(tensors, o, 4), (3u + 2) * 6);
  EXPECT_EQ(latency_hops_of(tensors, o, 1), 0u);  // one rank sends nothing
}

// A rank too large for every matrix would send everything in fp32 while the run says powersgd:
// refused, naming the largest rank that compresses one.
TEST(GradientExchange, PowerSgdThatCompressesNothingIsRefused) {
  auto one = single_process();
  try {
    GradientExchange(*one, {{"w", {64, 32}}, {"b", {32}}}, powersgd(1000, 2));
    ADD_FAILURE() << "a rank of 1000 for a 64 x 32 matrix was accepted";
  } catch (const std::invalid_argument& e) {
    // (rank r compresses 64 x 32 while 96 r <= 0.5 x 2048: r <= 10)
    EXPECT_NE(std::string(e.what()).find("powersgd_rank = 1000 compresses none of the 2 gradients"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("Lower powersgd_rank to 10 or less"), std::string::npos) << e.what();
  }
  GradientExchange(*one, {{"w", {64, 32}}, {"b", {32}}}, powersgd(10, 2));  // (10 does)
}

// A checkpoint's PowerSGD state taken back by a new exchange: the next exchange gives what the
// first exchange's own next one gives, bit for bit (same Q, error feedback and random engine).
TEST(GradientExchange, PowerSgdStateSurvivesACheckpoint) {
  auto one = single_process();
  ExchangeOptions o = powersgd(2, 0);
  const std::vector<GradientTensor> tensors = {{"w", {64, 32}}, {"b", {32}}};
  GradientExchange first(*one, tensors, o);
  std::vector<float> w = random_matrix(64 * 32, 1), b = random_matrix(32, 2);
  first.exchange({w.data(), b.data()}, 1);
  const ir::Environment<float> saved = first.saved_state();
  EXPECT_EQ(saved.size(), 3u);  // w's Q and error, the engine (b goes uncompressed)
  ASSERT_TRUE(saved.count("dist.powersgd.w.error"));
  double error = 0;
  for (float x : saved.at("dist.powersgd.w.error").real) error += std::abs(x);
  EXPECT_GT(error, 0);  // rank 2 of a random 64 x 32 matrix leaves most of it out
  GradientExchange second(*one, tensors, o);
  EXPECT_NE(second.restore_state(saved).find("error feedback and Q of 1 tensors"), std::string::npos);
  std::vector<float> w1 = random_matrix(64 * 32, 3), b1 = random_matrix(32, 4), w2 = w1, b2 = b1;
  first.exchange({w1.data(), b1.data()}, 2);
  second.exchange({w2.data(), b2.data()}, 2);
  EXPECT_EQ(w1, w2);
  // Saved for another powersgd_rank (Q of another width): starts anew, saying so.
  o.powersgd_rank = 3;
  GradientExchange other(*one, tensors, o);
  EXPECT_NE(other.restore_state(saved).find("another powersgd_rank, model"), std::string::npos);
  EXPECT_NE(other.restore_state({}).find("holds no PowerSGD state"), std::string::npos);
}

TEST(PowerSgd, RandomStateRoundTrips) {
  PowerSgd a({{8, 8}}, 2, 1), b({{8, 8}}, 2, 99);
  EXPECT_NE(a.random_state(), b.random_state());
  b.set_random_state(a.random_state());
  EXPECT_EQ(a.random_state(), b.random_state());
  EXPECT_THROW(b.set_random_state({1, 2, 3}), std::invalid_argument);
  EXPECT_THROW(b.restore(0, std::vector<float>(3), std::vector<float>(64)), std::invalid_argument);
}

TEST(Launch, ReadsMpirunAndTorchrunEnvironments) {
  {
    testing::ScopedEnv size("OMPI_COMM_WORLD_SIZE", "4"), rank("OMPI_COMM_WORLD_RANK", "2"),
        local("OMPI_COMM_WORLD_LOCAL_RANK", "0");
    const Launch l = detect_launch();
    EXPECT_EQ(l.size, 4);
    EXPECT_EQ(l.rank, 2);
    EXPECT_TRUE(l.mpi);
    EXPECT_EQ(l.launcher, "mpirun");
  }
  testing::ScopedEnv size("WORLD_SIZE", "2"), rank("RANK", "1"), addr("MASTER_ADDR", "node7"),
      port("MASTER_PORT", "29500");
  Launch l = detect_launch();
  EXPECT_FALSE(l.mpi);
  EXPECT_EQ(l.launcher, "RANK/WORLD_SIZE");  // a Slurm script's
  EXPECT_EQ(l.local_rank, 1);                // without LOCAL_RANK: one machine
  {
    testing::ScopedEnv slurm("SLURM_LOCALID", "0");  // ... or Slurm's
    EXPECT_EQ(detect_launch().local_rank, 0);
  }
  EXPECT_EQ(l.address, "node7");
  EXPECT_EQ(l.port, 29500);
  {
    // torchrun's agent holds MASTER_PORT with its own store: bertc's rendezvous takes the next.
    testing::ScopedEnv run("TORCHELASTIC_RUN_ID", "x"), agent("TORCHELASTIC_USE_AGENT_STORE", "True"),
        local("LOCAL_RANK", "0");
    l = detect_launch();
    EXPECT_EQ(l.launcher, "torchrun");
    EXPECT_EQ(l.port, 29501);
    EXPECT_EQ(l.local_rank, 0);
    testing::ScopedEnv chosen("BERTC_RENDEZVOUS_PORT", "31000");
    EXPECT_EQ(detect_launch().port, 31000);
  }
  {
    testing::ScopedEnv malformed("WORLD_SIZE", "two");
    EXPECT_THROW(detect_launch(), RankError);
  }
}

// What opening the world refuses, said ("(accepted)" when it opens).
std::string refusal() { return testing::refusal<RankError>([] { open_world(10); }); }

// The refusals before any connection: each names the variable to fix.
TEST(Launch, RefusesAnIncompleteRankEnvironment) {
  testing::ScopedEnv size("WORLD_SIZE", "2"), port("MASTER_PORT", "29500");
  EXPECT_NE(refusal().find("RANK is not: give each rank its own RANK from 0 to 1"), std::string::npos) << refusal();
  testing::ScopedEnv rank("RANK", "2");
  EXPECT_NE(refusal().find("RANK=2 is not below WORLD_SIZE=2"), std::string::npos) << refusal();
  testing::ScopedEnv rank1("RANK", "1");
  EXPECT_NE(refusal().find("MASTER_ADDR is not"), std::string::npos) << refusal();
  testing::ScopedEnv addr("MASTER_ADDR", "localhost"), port0("MASTER_PORT", "70000");
  EXPECT_NE(refusal().find("is not a port"), std::string::npos) << refusal();
}

// A world of no ranks, or a rank with no world: refused (both trained as one process, silently).
TEST(Launch, RefusesAWorldOfNoRanksAndARankWithoutAWorld) {
  {
    testing::ScopedEnv size("WORLD_SIZE", "0"), rank("RANK", "0");
    EXPECT_NE(refusal().find("WORLD_SIZE=0: a world has 1 rank or more"), std::string::npos) << refusal();
  }
  {
    testing::ScopedEnv rank("RANK", "3");
    EXPECT_NE(refusal().find("RANK=3 is set, but WORLD_SIZE is not"), std::string::npos) << refusal();
  }
  testing::ScopedEnv rank0("RANK", "0");  // (rank 0 of one process: nothing to refuse)
  EXPECT_EQ(open_world(10)->size(), 1);
}

TEST(Launch, OneProcessWithoutALauncher) {
  testing::ScopedEnv one("WORLD_SIZE", "1");  // torchrun --nproc-per-node 1
  EXPECT_EQ(open_world(10)->size(), 1);
}

}  // namespace
}  // namespace bertc::distributed
