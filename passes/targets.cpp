// GPU figures from vendor datasheets (dense peaks at boost clock), as in ../shared/FACTS.md, and
// the arch an --arch names.
#include "passes/targets.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

namespace bertc::passes {
namespace {

constexpr GpuSpec kGpus[] = {
    // name  title  arch  SMs  fp32  fp16  fp16TC bf16TC tf32TC  GB/s  GB  smem/block  smem/SM  warps/SM  blocks/SM
    {"p40", "Tesla P40", 61, 30, 11.76, 0.18, 0, 0, 0, 346, 24, 48, 96, 64, 32},
    {"p100", "Tesla P100 SXM2", 60, 56, 10.6, 21.2, 0, 0, 0, 732, 16, 48, 64, 64, 32},
    {"v100", "Tesla V100 SXM2", 70, 80, 15.7, 31.4, 125, 0, 0, 900, 32, 96, 96, 64, 32},
    {"t4", "Tesla T4", 75, 40, 8.1, 16.2, 65, 0, 0, 320, 16, 64, 64, 32, 16},
    {"a100", "A100 SXM4 80GB", 80, 108, 19.5, 78, 312, 312, 156, 2039, 80, 163, 164, 64, 32},
    {"rtx3090", "RTX 3090", 86, 82, 35.6, 35.6, 71, 71, 35.6, 936, 24, 99, 100, 48, 16},
    {"h100", "H100 SXM", 90, 132, 67, 134, 989, 989, 495, 3350, 80, 227, 228, 64, 32},
    {"h200", "H200 SXM", 90, 132, 67, 134, 989, 989, 495, 4800, 141, 227, 228, 64, 32},
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
