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
  s.between = &find_interconnect("10gbe", LinkReach::BetweenMachines);  // 1.25 GB/s
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
  s.within = &find_interconnect("pcie3", LinkReach::WithinMachine);  // 15.75 GB/s
  s.between = &find_interconnect("ib-hdr", LinkReach::BetweenMachines);  // 25 GB/s: PCIe is the slower
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

// With gradient accumulation the sums run in the last micro-batch's backward only: 8 micro-batches
// of a 0.8 s step hide at most 2/3 of 0.1 s (the whole step's 2/3 was counted before).
TEST(ScalingEstimate, OnlyTheLastMicroBatchsBackwardHidesTheAllReduce) {
  ScalingSetup s;
  s.machines = 2;
  s.between = &find_interconnect("10gbe", LinkReach::BetweenMachines);  // 1.25 GB/s
  s.compute_seconds = 0.8;
  s.bytes_per_step = 1.25e9;  // 1 s of all-reduce and 60 us of hops
  s.micro_batches = 8;
  const ScalingEstimate e = estimate_scaling(s);
  EXPECT_NEAR(e.overlapped_step_seconds, 0.8 + 1.0 + 60e-6 - 0.1 * 2 / 3, 1e-12);
  s.micro_batches = 0;
  EXPECT_THROW(estimate_scaling(s), std::invalid_argument);
}

// A ring over a million GPUs pays 2 (N-1) hops' latency: seconds over Ethernet, whatever the bytes
// (the bandwidth term alone gave 2 s for bert-large, as if latency were free).
TEST(ScalingEstimate, LatencyGrowsWithTheRing) {
  ScalingSetup s;
  s.gpus_per_machine = 1;
  s.machines = 1'000'000;
  s.between = &find_interconnect("10gbe", LinkReach::BetweenMachines);
  s.bytes_per_step = 1;
  const ScalingEstimate e = estimate_scaling(s);
  EXPECT_NEAR(e.allreduce_seconds, 2 * 999'999 * 30e-6, 1e-3);  // 60 s of hops
}

// A step of several collectives pays a hop's latency for each of their ring steps (latency_hops),
// counted apart (latency_seconds) and in the all-reduce.
TEST(ScalingEstimate, LatencyOfEveryCollectivesRingSteps) {
  ScalingSetup s;
  s.machines = 2;
  Interconnect slow = find_interconnect("1gbe", LinkReach::BetweenMachines);
  slow.hop_us = 1000;  // (bertc estimate --latency-us 1000)
  s.between = &slow;
  s.bytes_per_step = 125e6;  // 1 s at 1 Gbit/s, and 2 (N-1)/N = 1
  s.latency_hops = 10;
  const ScalingEstimate e = estimate_scaling(s);
  EXPECT_NEAR(e.latency_seconds, 10 * 1e-3, 1e-12);
  EXPECT_NEAR(e.allreduce_seconds, 1.0 + 10 * 1e-3, 1e-9);
  s.latency_hops.reset();  // one all-reduce's 2 (N-1) = 2 steps
  EXPECT_NEAR(estimate_scaling(s).latency_seconds, 2 * 1e-3, 1e-12);
}

TEST(ScalingEstimate, RefusesUnknownLinksAndMissingOnes) {
  EXPECT_THROW(find_interconnect("carrier-pigeon", LinkReach::BetweenMachines), std::invalid_argument);
  ScalingSetup s;
  s.machines = 2;
  EXPECT_THROW(estimate_scaling(s), std::invalid_argument);
  EXPECT_DOUBLE_EQ(cloud_price("v100")->dollars_per_hour, 3.06);
  EXPECT_FALSE(cloud_price("p40"));
}

// A link of the wrong reach (NVLink between machines, Ethernet inside one: --within and --between
// swapped gave an all-reduce 350 times too fast, exit 0) or one the GPU has not (NVLink on a P40)
// is refused, naming what to give.
TEST(ScalingEstimate, RefusesLinksOfTheWrongReachOrGpu) {
  EXPECT_EQ(find_interconnect("nvlink3", LinkReach::WithinMachine).gbs, 300.0);
  auto message = [](auto f) {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(message([] { find_interconnect("nvlink3", LinkReach::BetweenMachines); }),
            "'nvlink3' (NVLink 3 (A100 SXM4)) joins a machine's GPUs, not between machines: give one of 1gbe, 10gbe, 25gbe, "
            "100gbe, ib-edr, ib-hdr (--within is the link inside a machine, --between the network between machines)");
  EXPECT_THROW(find_interconnect("10gbe", LinkReach::WithinMachine), std::invalid_argument);
  EXPECT_THROW(find_interconnect("pcie4", LinkReach::BetweenMachines), std::invalid_argument);
  EXPECT_EQ(message([] { require_link_of(find_interconnect("nvlink3", LinkReach::WithinMachine), "p40"); }),
            "nvlink3 (NVLink 3 (A100 SXM4)) is a link of a100 only, and --gpu p40 has none: give pcie3 or pcie4");
  EXPECT_NO_THROW(require_link_of(find_interconnect("nvlink4", LinkReach::WithinMachine), "h200"));
  EXPECT_THROW(require_link_of(find_interconnect("nvlink4", LinkReach::WithinMachine), "h1"), std::invalid_argument);
  EXPECT_NO_THROW(require_link_of(find_interconnect("pcie3", LinkReach::WithinMachine), "p40"));
}

}  // namespace
}  // namespace bertc::passes
