// What data-parallel training on several GPUs and machines would take: the compile report's
// roofline step time on each GPU, plus the gradient all-reduce over the slowest link (a ring:
// each GPU sends and receives 2 (N-1) / N times the bytes), with or without the all-reduce hidden
// behind the backward; days to train and cost. An estimate, to compare set-ups, not a promise.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "passes/targets.h"

namespace bertc::passes {

// Where a link joins GPUs: a bus or NVLink inside one machine, a network between machines.
enum class LinkReach { WithinMachine, BetweenMachines };

struct Interconnect {
  std::string_view name;   // "10gbe"
  std::string_view title;  // "10 Gigabit Ethernet"
  double gbs;              // line rate per direction, GB/s (an all-reduce reaches 70-90% of it)
  double hop_us;           // one ring step's latency over it, microseconds (a message sent and taken)
  LinkReach reach;
  std::string_view gpus;   // the GPUs of the table whose boards carry it ("v100"; "": any GPU)
};
std::span<const Interconnect> interconnects();
// The names of the links of one reach (what --within and --between take).
std::vector<std::string> interconnect_names(LinkReach reach);
// By name, of `reach`; throws std::invalid_argument naming the links of that reach for anything
// else (a network given --within, a bus given --between: a figure hundreds of times off).
const Interconnect& find_interconnect(std::string_view name, LinkReach reach);
// Throws std::invalid_argument when `link` is one `gpu` (a name of the GPU table) has not, naming
// the links it may have instead (NVLink 3 on a P40).
void require_link_of(const Interconnect& link, std::string_view gpu);

// An hourly price per GPU for a few cloud offers (on demand, 2024), by GPU name; nullopt when none.
struct CloudPrice {
  std::string_view gpu;
  double dollars_per_hour;
  std::string_view offer;
};
std::span<const CloudPrice> cloud_prices();
std::optional<CloudPrice> cloud_price(std::string_view gpu);

struct ScalingSetup {
  int gpus_per_machine = 1, machines = 1;
  const Interconnect* within = nullptr;   // between the GPUs of a machine
  const Interconnect* between = nullptr;  // between machines (needed when machines > 1)
  double compute_seconds = 0;             // one GPU's optimizer step (roofline), all micro-batches
  double backward_share = 2.0 / 3.0;      // of a micro-batch's compute: the backward, which an all-reduce may hide behind
  // The micro-batches of a step ([train] gradient_accumulation_steps): the gradients are summed
  // across ranks during the last one's backward only (the earlier ones' are not final yet), so
  // only that backward can hide the all-reduce.
  int64_t micro_batches = 1;
  double bytes_per_step = 0;              // each GPU's all-reduce messages per optimizer step
  // The ring steps of a step's collectives, each paying a hop's latency (distributed::
  // latency_hops_of: 2 (N-1) a bucket's sum); nullopt: one all-reduce's 2 (N-1).
  std::optional<double> latency_hops;
  int64_t steps = 0;
  double dollars_per_gpu_hour = 0;        // 0: no cost
};

struct ScalingEstimate {
  int gpus = 1;
  double link_gbs = 0;          // the slowest link of the ring
  double allreduce_seconds = 0; // 2 (N-1)/N x bytes / link, and the latencies
  double latency_seconds = 0;   // of allreduce_seconds: the hops' latencies
  double step_seconds = 0;      // compute + all-reduce, one after the other (bertc today)
  double overlapped_step_seconds = 0;  // the all-reduce behind the last micro-batch's backward, as far as it reaches
  double days = 0, overlapped_days = 0;
  double cost = 0;              // dollars, at step_seconds
};

ScalingEstimate estimate_scaling(const ScalingSetup& setup);

}  // namespace bertc::passes
