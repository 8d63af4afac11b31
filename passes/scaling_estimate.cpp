// The data-parallel estimate and its tables (see scaling_estimate.h).
#include "passes/scaling_estimate.h"

#include <algorithm>
#include <array>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace bertc::passes {
namespace {

// Line rates per direction. PCIe: 0.985 GB/s per lane (gen 3), 1.97 (gen 4); NVLink: V100 SXM2's
// six NVLink 2 links, 150 GB/s per direction; A100's NVLink 3, 300; H100's and H200's NVLink 4,
// 450. A ring step's latency (order of magnitude, not measured here): a few microseconds within a
// machine and over InfiniBand's RDMA, tens over Ethernet's TCP sockets (NCCL's socket transport,
// a kernel's network stack).
constexpr LinkReach kIn = LinkReach::WithinMachine, kOut = LinkReach::BetweenMachines;
constexpr std::array kInterconnects{
    Interconnect{"pcie3", "PCIe 3.0 x16", 15.75, 5, kIn, ""},
    Interconnect{"pcie4", "PCIe 4.0 x16", 31.5, 5, kIn, ""},
    Interconnect{"nvlink2", "NVLink 2 (V100 SXM2)", 150.0, 3, kIn, "v100"},
    Interconnect{"nvlink3", "NVLink 3 (A100 SXM4)", 300.0, 3, kIn, "a100"},
    Interconnect{"nvlink4", "NVLink 4 (H100/H200 SXM)", 450.0, 3, kIn, "h100 h200"},
    Interconnect{"1gbe", "Gigabit Ethernet", 0.125, 50, kOut, ""},
    Interconnect{"10gbe", "10 Gigabit Ethernet", 1.25, 30, kOut, ""},
    Interconnect{"25gbe", "25 Gigabit Ethernet", 3.125, 25, kOut, ""},
    Interconnect{"100gbe", "100 Gigabit Ethernet", 12.5, 20, kOut, ""},
    Interconnect{"ib-edr", "InfiniBand EDR (100 Gb/s)", 12.5, 3, kOut, ""},
    Interconnect{"ib-hdr", "InfiniBand HDR (200 Gb/s)", 25.0, 3, kOut, ""},
};

bool carries(const Interconnect& link, std::string_view gpu) {
  if (link.gpus.empty()) return true;
  for (size_t at = 0; at < link.gpus.size();) {
    const size_t end = std::min(link.gpus.find(' ', at), link.gpus.size());
    if (link.gpus.substr(at, end - at) == gpu) return true;
    at = end + 1;
  }
  return false;
}

// On-demand prices per GPU-hour: AWS p3.2xlarge (one V100), Google Cloud's A100 40 GB GPU price.
constexpr std::array kPrices{
    CloudPrice{"v100", 3.06, "AWS p3.2xlarge, on demand"},
    CloudPrice{"a100", 2.93, "Google Cloud A100 40 GB, on demand"},
};

}  // namespace

std::span<const Interconnect> interconnects() { return kInterconnects; }

std::vector<std::string> interconnect_names(LinkReach reach) {
  std::vector<std::string> names;
  for (const Interconnect& i : kInterconnects)
    if (i.reach == reach) names.emplace_back(i.name);
  return names;
}

const Interconnect& find_interconnect(std::string_view name, LinkReach reach) {
  const std::string_view where = reach == LinkReach::WithinMachine ? "between a machine's GPUs" : "between machines";
  for (const Interconnect& i : kInterconnects) {
    if (i.name != name) continue;
    if (i.reach == reach) return i;
    throw std::invalid_argument(fmt::format("'{}' ({}) joins {}, not {}: give one of {} (--within is the link inside a "
                                            "machine, --between the network between machines)",
                                            name, i.title, reach == LinkReach::WithinMachine ? "machines" : "a machine's GPUs",
                                            where, fmt::join(interconnect_names(reach), ", ")));
  }
  throw std::invalid_argument(fmt::format("unknown link '{}' {}: choose one of {}", name, where,
                                          fmt::join(interconnect_names(reach), ", ")));
}

void require_link_of(const Interconnect& link, std::string_view gpu) {
  if (carries(link, gpu)) return;
  std::vector<std::string_view> its;
  for (const Interconnect& i : kInterconnects)
    if (i.reach == link.reach && carries(i, gpu)) its.push_back(i.name);
  throw std::invalid_argument(fmt::format("{} ({}) is a link of {} only, and --gpu {} has none: give {}", link.name,
                                          link.title, link.gpus, gpu, fmt::join(its, " or ")));
}

std::span<const CloudPrice> cloud_prices() { return kPrices; }

std::optional<CloudPrice> cloud_price(std::string_view gpu) {
  for (const CloudPrice& p : kPrices)
    if (p.gpu == gpu) return p;
  return std::nullopt;
}

ScalingEstimate estimate_scaling(const ScalingSetup& s) {
  if (s.gpus_per_machine < 1 || s.machines < 1) throw std::invalid_argument("GPUs per machine and machines must be >= 1");
  if (s.machines > 1 && !s.between) throw std::invalid_argument("several machines need an interconnect between them");
  if (s.gpus_per_machine > 1 && !s.within) throw std::invalid_argument("several GPUs per machine need a link between them");
  ScalingEstimate e;
  e.gpus = s.gpus_per_machine * s.machines;
  if (e.gpus > 1) {
    // A ring through every GPU crosses each link with the same traffic: the slowest link sets the pace.
    e.link_gbs = s.machines > 1 ? s.between->gbs : s.within->gbs;
    if (s.machines > 1 && s.gpus_per_machine > 1) e.link_gbs = std::min(e.link_gbs, s.within->gbs);
    // 2 (N-1) steps (reduce-scatter, then all-gather), each sending 1/N of the bytes and paying a
    // hop's latency: at a million GPUs the latencies alone are seconds.
    const double hop_us = std::max(s.machines > 1 ? s.between->hop_us : 0.0,
                                   s.gpus_per_machine > 1 ? s.within->hop_us : 0.0);
    const double n = e.gpus;
    e.latency_seconds = s.latency_hops.value_or(2 * (n - 1)) * hop_us * 1e-6;
    e.allreduce_seconds = 2 * (n - 1) / n * s.bytes_per_step / (e.link_gbs * 1e9) + e.latency_seconds;
  }
  e.step_seconds = s.compute_seconds + e.allreduce_seconds;
  if (s.micro_batches < 1) throw std::invalid_argument("a step has at least one micro-batch");
  const double hidden =
      std::min(e.allreduce_seconds, s.backward_share * s.compute_seconds / static_cast<double>(s.micro_batches));
  e.overlapped_step_seconds = e.step_seconds - hidden;
  e.days = e.step_seconds * double(s.steps) / 86400;
  e.overlapped_days = e.overlapped_step_seconds * double(s.steps) / 86400;
  e.cost = e.step_seconds * double(s.steps) / 3600 * e.gpus * s.dollars_per_gpu_hour;
  return e;
}

}  // namespace bertc::passes
