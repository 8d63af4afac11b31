// GPU figures from vendor datasheets (dense peaks at boost clock), as in ../shared/FACTS.md, and
// the arch an --arch names.
#include "passes/targets.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

namespace bertc::passes {
namespace {

// Latencies (cycles: ALU, special function, shared load, global load from DRAM, mma, barrier).
// Measured, as quoted from the papers (read second-hand: check a figure against its paper's table
// before relying on it): V100 ALU 4 and shared 19 (Jia et al. 2018, arXiv 1804.06826); A100 ALU 4,
// shared 23, rcp.approx 23 (Abdelkhalik et al. 2022, arXiv 2208.11174), DRAM 466 (Luo et al. 2024,
// arXiv 2402.13499, A100 PCIe; Abdelkhalik's is 290); H800 PCIe shared 29, DRAM 479, mma
// m16n8k16 f16 24 (Luo et al.; an H800 is an H100 of other links), ALU 4 (Jarmusch et al. 2025,
// arXiv 2507.10789, H100 PCIe); A100 mma m16n8k16 about 25 (Sun et al. 2022, arXiv 2206.02874, two
// quotes differ). Pascal's ALU 4, SFU 20 and shared 24 are Accel-Sim's calibrated TITAN X (GP102)
// config, not a measurement. Assumed, no measurement found: Pascal's and Volta's DRAM latency (400,
// between the A100's two figures), V100's mma (32), every barrier (20), the special function of
// sm_70 to sm_90 (the A100's 23), and the T4's and RTX 3090's (their arch's neighbour's).
constexpr CycleLatencies kPascal{4, 20, 24, 400, 0, 20};
constexpr CycleLatencies kVolta{4, 23, 19, 400, 32, 20};
constexpr CycleLatencies kAmpere{4, 23, 23, 466, 25, 20};
constexpr CycleLatencies kHopper{4, 23, 29, 479, 24, 20};

constexpr GpuSpec kGpus[] = {
    // name  title  arch  SMs  fp32  fp16  fp16TC bf16TC tf32TC  GB/s  GB  smem/block  smem/SM  warps/SM  blocks/SM  latencies
    {"p40", "Tesla P40", 61, 30, 11.76, 0.18, 0, 0, 0, 346, 24, 48, 96, 64, 32, kPascal},
    {"p100", "Tesla P100 SXM2", 60, 56, 10.6, 21.2, 0, 0, 0, 732, 16, 48, 64, 64, 32, kPascal},
    {"v100", "Tesla V100 SXM2", 70, 80, 15.7, 31.4, 125, 0, 0, 900, 32, 96, 96, 64, 32, kVolta},
    {"t4", "Tesla T4", 75, 40, 8.1, 16.2, 65, 0, 0, 320, 16, 64, 64, 32, 16, kVolta},
    {"a100", "A100 SXM4 80GB", 80, 108, 19.5, 78, 312, 312, 156, 2039, 80, 163, 164, 64, 32, kAmpere},
    {"rtx3090", "RTX 3090", 86, 82, 35.6, 35.6, 71, 71, 35.6, 936, 24, 99, 100, 48, 16, kAmpere},
    {"h100", "H100 SXM", 90, 132, 67, 134, 989, 989, 495, 3350, 80, 227, 228, 64, 32, kHopper},
    {"h200", "H200 SXM", 90, 132, 67, 134, 989, 989, 495, 4800, 141, 227, 228, 64, 32, kHopper},
};

}  // namespace

double GpuSpec::clock_ghz() const {
  const int lanes = arch == 61 || arch == 86 || arch == 89 || arch == 90 ? 128 : 64;
  return fp32_tflops * 1e3 / (2.0 * lanes * multiprocessors);
}

std::span<const GpuSpec> gpu_specs() { return kGpus; }

std::optional<GpuSpec> find_gpu(std::string_view arch_or_name) {
  if (arch_or_name == "none" || arch_or_name == "cpu") return std::nullopt;
  for (const GpuSpec& g : kGpus)
    if (g.name == arch_or_name || fmt::format("sm_{}", g.arch) == arch_or_name) return g;
  // One entry per arch, with the GPUs of that arch: "sm_90 (h100, h200)".
  std::vector<std::pair<int, std::vector<std::string_view>>> archs;
  for (const GpuSpec& g : kGpus) {
    auto it = std::find_if(archs.begin(), archs.end(), [&](const auto& a) { return a.first == g.arch; });
    if (it == archs.end()) archs.push_back({g.arch, {g.name}});
    else it->second.push_back(g.name);
  }
  std::vector<std::string> choices;
  for (const auto& [arch, names] : archs) choices.push_back(fmt::format("sm_{} ({})", arch, fmt::join(names, ", ")));
  throw std::invalid_argument(fmt::format("unknown arch '{}' (known: {}, none, auto; a GPU's datasheet figures are "
                                          "added in passes/targets.cpp)",
                                          arch_or_name, fmt::join(choices, ", ")));
}

std::optional<GpuSpec> gpu_of_sm(int sm) {
  for (const GpuSpec& g : kGpus)
    if (g.arch == sm) return g;
  return std::nullopt;
}

Arch Arch::parse(std::string_view text) {
  Arch a;
  a.text_ = std::string(text);
  if (text != "auto") a.gpu_ = find_gpu(text);
  return a;
}

Arch Arch::of_sm(int sm) { return parse(fmt::format("sm_{}", sm)); }

}  // namespace bertc::passes

std::optional<std::string> bertc::support::OptionType<bertc::passes::Arch>::from_value(const OptionValue& v,
                                                                                      passes::Arch& out) {
  try {
    out = passes::Arch::parse(std::get<std::string>(v));
    return std::nullopt;
  } catch (const std::invalid_argument& e) {
    return fmt::format("must name a GPU arch: {}", e.what());
  }
}
