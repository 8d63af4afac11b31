// passes/scaling_estimate: the ring all-reduce, the overlap with the backward, days and cost, on
// figures worked by hand.
#include <gtest/gtest.h>

#include "passes/scaling_estimate.h"

namespace bertc::passes {
namespace {

TEST(ScalingEstimate, RingOverTheSlowestLinkThenOverlapDaysAndCost) {
  ScalingSetup s;
  s.gpus_per_machine = 1;
  s.machines = 2;
  s.between = &find_interconnect("10gbe");  // 1.25 GB/s
  s.compute_seconds = 0.3;
  s.bytes_per_step = 1.25e9;
  s.steps = 86400;
  s.dollars_per_gpu_hour = 1.0;
  const ScalingEstimate e = estimate_scaling(s);
  EXPECT_EQ(e.gpus, 2);
  // 2 (2-1)/2 x 1.25e9 B / 1.25e9 B/s, and 2 (2-1) hops of 30 us
  EXPECT_DOUBLE_EQ(e.allreduce_seconds, 1.0 + 60e-6);
  EXPECT_DOUBLE_EQ(e.step_seconds, 1.3 + 60e-6);
  EXPECT_NEAR(e.overlapped_step_seconds, 1.1 + 60e-6, 1e-12);  // the backward (0.2 s) hides 0.2 s of it
  EXPECT_NEAR(e.days, 1.3 + 60e-6, 1e-12);                     // 86400 steps of 1.3 s and the hops
  EXPECT_NEAR(e.cost, (1.3 + 60e-6) * 86400 / 3600 * 2, 1e-9);  // 2 GPUs at $1/h
}

TEST(ScalingEstimate, TheSlowerOfTheTwoLinksAndOneGpuSendsNothing) {
  ScalingSetup s;
  s.gpus_per_machine = 4;
  s.machines = 3;
  s.within = &find_interconnect("pcie3");  // 15.75 GB/s
  s.between = &find_interconnect("ib-hdr");  // 25 GB/s: PCIe is the slower
  s.compute_seconds = 1;
  s.bytes_per_step = 12e9;
  const ScalingEstimate e = estimate_scaling(s);
  EXPECT_DOUBLE_EQ(e.link_gbs, 15.75);
  // (the slower hop: PCIe's 5 us, against InfiniBand's 3)
  EXPECT_DOUBLE_EQ(e.allreduce_seconds, 2.0 * 11 / 12 * 12e9 / 15.75e9 + 2 * 11 * 5e-6);
  EXPECT_NEAR(e.overlapped_step_seconds, e.step_seconds - 2.0 / 3, 1e-12);  // hides the whole backward
  ScalingSetup alone;
  alone.compute_seconds = 0.5;
  alone.bytes_per_step = 1e9;
  EXPECT_EQ(estimate_scaling(alone).allreduce_seconds, 0);
  EXPECT_EQ(estimate_scaling(alone).step_seconds, 0.5);
}

// A ring over a million GPUs pays 2 (N-1) hops' latency: seconds over Ethernet, whatever the bytes
// (the bandwidth term alone gave 2 s for bert-large, as if latency were free).
TEST(ScalingEstimate, LatencyGrowsWithTheRing) {
  ScalingSetup s;
  s.gpus_per_machine = 1;
  s.machines = 1'000'000;
  s.between = &find_interconnect("10gbe");
  s.bytes_per_step = 1;
  const ScalingEstimate e = estimate_scaling(s);
  EXPECT_NEAR(e.allreduce_seconds, 2 * 999'999 * 30e-6, 1e-3);  // 60 s of hops
}

TEST(ScalingEstimate, RefusesUnknownLinksAndMissingOnes) {
  EXPECT_THROW(find_interconnect("carrier-pigeon"), std::invalid_argument);
  ScalingSetup s;
  s.machines = 2;
  EXPECT_THROW(estimate_scaling(s), std::invalid_argument);
  EXPECT_DOUBLE_EQ(cloud_price("v100")->dollars_per_hour, 3.06);
  EXPECT_FALSE(cloud_price("p40"));
}

}  // namespace
}  // namespace bertc::passes
