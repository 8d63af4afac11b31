// The PTX device's counts as text (see ptx_counts.h).
#include "driver/ptx_counts.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "passes/cost_model.h"

namespace bertc::driver {
namespace {

double ratio(uint64_t got, uint64_t ideal) {
  return ideal ? static_cast<double>(got) / static_cast<double>(ideal) : 1.0;
}

// "1.04x", or "-" for a kernel with no such requests.
std::string ratio_text(uint64_t got, uint64_t ideal) {
  return ideal ? fmt::format("{:.2f}x", ratio(got, ideal)) : std::string("-");
}

// One kernel's launches: their counts added, and their projected seconds on a GPU added (each
// launch projected on its own: a launch's fill of the multiprocessors is its own grid's).
struct KernelLine {
  std::string kernel, label, family;
  int64_t launches = 0;
  uint32_t registers = 0, register_bound = 0;
  ptx::LaunchCounts counts;
  double seconds = 0, occupancy = 0;  // occupancy: the warps' share, weighted by time
  double roofline = 0;                // the cost model's seconds for the same launches
  std::map<std::string_view, double> by_bound;
};

// "shared loads 4 B 88%, 16 B 12%; ...": each kind of access by the bytes a lane moves.
std::string widths_text(const ptx::LaunchCounts& all) {
  static constexpr const char* kinds[] = {"shared loads", "shared stores", "global loads", "global stores"};
  std::vector<std::string> parts;
  for (size_t k = 0; k < all.by_width.size(); ++k) {
    uint64_t total = 0;
    for (uint64_t n : all.by_width[k]) total += n;
    if (total == 0) continue;
    std::vector<std::string> shares;
    for (size_t w = 0; w < ptx::kAccessWidths; ++w)
      if (all.by_width[k][w])
        shares.push_back(fmt::format("{} B {:.0f}%", ptx::kAccessWidthBytes[w],
                                     100.0 * static_cast<double>(all.by_width[k][w]) / static_cast<double>(total)));
    parts.push_back(fmt::format("{} {}", kinds[k], fmt::join(shares, ", ")));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

std::string totals_text(const ptx::LaunchCounts& all, size_t launches) {
  return fmt::format("  {} launches, {:.1f} M thread-instructions, {:.3g} GFLOP; by class: {}\n"
                     "  shared memory: {} warp requests in {:.2f}x their conflict-free wavefronts; global memory: {} "
                     "warp requests in {:.2f}x the fewest 32-byte sectors their bytes need\n",
                     launches, static_cast<double>(all.thread_instructions) / 1e6, all.flops / 1e9,
                     class_shares_text(all), all.shared_requests,
                     ratio(all.shared_wavefronts, all.shared_ideal_wavefronts), all.global_requests,
                     ratio(all.global_sectors, all.global_ideal_sectors)) +
         fmt::format("  by the bytes a lane moves: {}\n", widths_text(all));
}

// The kernels of `launches` projected on `rates`, by kernel.
std::vector<KernelLine> kernel_lines(const std::vector<runtime::PtxLaunchRecord>& launches, const ptx::GpuRates& rates,
                                     const passes::GpuSpec& gpu, const RooflineOf& roofline) {
  std::map<std::string, KernelLine> by_name;
  for (size_t i = 0; i < launches.size(); ++i) {
    const runtime::PtxLaunchRecord& l = launches[i];
    KernelLine& k = by_name[l.kernel];
    if (roofline) k.roofline += roofline(i, gpu);
    k.kernel = l.kernel, k.label = l.label, k.family = l.family, k.registers = l.registers;
    k.register_bound = l.register_bound;
    ++k.launches;
    k.counts += l.counts;
    const ptx::Projection p = ptx::project(l.counts, rates, l.registers);
    k.seconds += p.seconds;
    k.by_bound[ptx::bound_name(p.bound)] += p.seconds;
    k.occupancy +=
        p.seconds * ptx::occupancy(l.counts.block_threads, l.counts.block_shared_bytes, l.registers, rates).warps_share;
  }
  std::vector<KernelLine> out;
  for (auto& [name, k] : by_name) out.push_back(std::move(k));
  std::sort(out.begin(), out.end(), [](const KernelLine& a, const KernelLine& b) { return a.seconds > b.seconds; });
  return out;
}

// How the launches were run: whole, or sampled (EmulatorControls::sample_blocks).
std::string sampling_text(const std::vector<runtime::PtxLaunchRecord>& launches) {
  uint64_t blocks = 0, executed = 0;
  size_t repeats = 0, sampled = 0;
  for (const runtime::PtxLaunchRecord& l : launches) {
    repeats += l.repeat;
    if (l.repeat || l.counts.executed_blocks == l.counts.blocks) continue;  // (run whole)
    blocks += l.counts.blocks, executed += l.counts.executed_blocks;
    ++sampled;
  }
  if (repeats == 0 && sampled == 0) return "";
  return fmt::format("  sampled: {} of {} launches ran {} of their {} blocks (spread over each grid, the first and last "
                     "among them) and were scaled to their grids, {} ran whole (grids as small as the sample, or "
                     "blocks whose work follows the data); {} repeats of a kernel and grid took its first launch's "
                     "counts: figures of the whole launches where blocks do alike, the tail tiles' share aside\n",
                     sampled, launches.size() - repeats, executed, blocks, launches.size() - repeats - sampled, repeats);
}

// Each family's projected milliseconds, the largest first ("matmul 12.1 ms, reduction 4.2 ms"):
// what a profile's per-family table (bertc train --profile) sets beside them.
std::string family_totals_text(const std::vector<KernelLine>& lines) {
  std::map<std::string, double> by_family;
  for (const KernelLine& k : lines) by_family[k.family] += k.seconds;
  std::vector<std::pair<std::string, double>> sorted(by_family.begin(), by_family.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> parts;
  for (const auto& [family, seconds] : sorted) parts.push_back(fmt::format("{} {:.2f} ms", family, seconds * 1e3));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string_view main_bound(const KernelLine& k) {
  return std::max_element(k.by_bound.begin(), k.by_bound.end(),
                          [](const auto& a, const auto& b) { return a.second < b.second; })
      ->first;
}

}  // namespace

std::string class_shares_text(const ptx::LaunchCounts& counts) {
  std::vector<std::string> parts;
  for (size_t c = 0; c < ptx::kInstructionClasses; ++c)
    if (counts.by_class[c])
      parts.push_back(fmt::format("{} {:.1f}%", ptx::class_name(static_cast<ptx::InstructionClass>(c)),
                                  100.0 * static_cast<double>(counts.by_class[c]) /
                                      static_cast<double>(counts.thread_instructions)));
  return fmt::format("{}", fmt::join(parts, ", "));
}

ptx::GpuRates rates_of(const passes::GpuSpec& gpu, passes::Precision precision) {
  using passes::Precision;
  // (the products' input type under each precision; fp32 and fp32-fp16storage run no mma)
  const bool tensor = precision == Precision::Fp16 || precision == Precision::Bf16 || precision == Precision::Tf32;
  const ir::DType inputs = precision == Precision::Fp16   ? ir::DType::F16
                           : precision == Precision::Bf16 ? ir::DType::BF16
                                                          : ir::DType::F32;
  return {std::string(gpu.title),
          gpu.multiprocessors,
          gpu.clock_ghz(),
          4,
          gpu.fp32_tflops,
          tensor ? passes::matrix_peak(gpu, inputs, precision) / 1e12 : 0.0,  // (matrix_peak: FLOP/s)
          gpu.bandwidth_gbs,
          passes::kLaunchSeconds,
          static_cast<uint32_t>(gpu.max_warps_per_sm),
          static_cast<uint32_t>(gpu.max_blocks_per_sm),
          64 << 10,
          static_cast<uint64_t>(gpu.shared_kb_per_sm * 1024)};
}

std::string ptx_counts_text(const std::vector<runtime::PtxLaunchRecord>& launches, int sm, passes::Precision precision,
                            bool registers_known, const RooflineOf& roofline, size_t top) {
  ptx::LaunchCounts all;
  for (const runtime::PtxLaunchRecord& l : launches) all += l.counts;
  const std::optional<passes::GpuSpec> timed_on = passes::gpu_of_sm(sm);
  std::string out = fmt::format("counted on the PTX emulator (counts, and projections from them: not GPU "
                                "measurements; no cache modelled, ptx/projection.h; {}):\n",
                                timed_on ? fmt::format("each warp's dependences timed with the {}'s latencies, "
                                                       "passes/targets.cpp, ptx/timing.h",
                                                       timed_on->title)
                                         : std::string("not timed: no GPU of the arch in the table"));
  out += totals_text(all, launches.size());
  out += sampling_text(launches);
  if (all.global_racecheck_partial)
    out += fmt::format("  racecheck of global memory: {} launches touched more memory than it remembers (64 MiB a "
                       "launch); their accesses past it went unchecked for races\n",
                       all.global_racecheck_partial);
  out += registers_known ? fmt::format("  registers: ptxas's for sm_{} (NVRTC's cubins), in the occupancy\n", sm)
                         : fmt::format("  registers: not known (the kernels ran from PTX: no cubin gives ptxas's counts "
                                       "for sm_{}): at most what each kernel's launch bounds allow (.maxnreg, or "
                                       ".maxntid x .minnctapersm, shown <=N); occupancy from threads and shared "
                                       "memory, an upper bound\n",
                                       sm);
  bool first = true;
  for (const passes::GpuSpec& gpu : passes::gpu_specs()) {
    if (gpu.arch != sm) continue;
    const std::vector<KernelLine> lines = kernel_lines(launches, rates_of(gpu, precision), gpu, roofline);
    double seconds = 0, roofline_seconds = 0;
    for (const KernelLine& k : lines) seconds += k.seconds, roofline_seconds += k.roofline;
    if (first) {  // (the table on the arch's first GPU; the others' totals after it)
      out += fmt::format("  kernels by projected time on the {} ({} of {}):\n", gpu.title, std::min(top, lines.size()),
                         lines.size());
      out += fmt::format("    {:<20} {:<10} {:>8} {:>9} {:>7} {:>7} {:>5} {:>9} {:>10} {:<7} {:>9} {}\n", "kernel",
                         "family", "launches", "M instr", "shared", "sectors", "regs", "occupancy", "projected", "bound",
                         roofline ? "roofline" : "", "op");
      for (size_t i = 0; i < std::min(top, lines.size()); ++i) {
        const KernelLine& k = lines[i];
        out += fmt::format("    {:<20} {:<10} {:>8} {:>9.2f} {:>7} {:>7} {:>5} {:>8.0f}% {:>7.3f} ms {:<7} {:>9} {}\n",
                           k.kernel.substr(0, 20), k.family, k.launches,
                           static_cast<double>(k.counts.thread_instructions) / 1e6,
                           ratio_text(k.counts.shared_wavefronts, k.counts.shared_ideal_wavefronts),
                           ratio_text(k.counts.global_sectors, k.counts.global_ideal_sectors),
                           k.registers        ? std::to_string(k.registers)
                           : k.register_bound ? fmt::format("<={}", k.register_bound)
                                              : std::string("-"),
                           k.seconds > 0 ? 100 * k.occupancy / k.seconds : 0.0, k.seconds * 1e3, main_bound(k),
                           roofline ? fmt::format("{:.3f} ms", k.roofline * 1e3) : "", k.label);
      }
      first = false;
    }
    out += fmt::format("  projected on the {}: {:.3f} ms for these {} launches", gpu.title, seconds * 1e3, launches.size());
    out += roofline ? fmt::format(" (the compile report's roofline for them: {:.3f} ms; the projection is {:.1f}x it)\n", roofline_seconds * 1e3,
                                  roofline_seconds > 0 ? seconds / roofline_seconds : 0.0)
                    : "\n";
    out += fmt::format("    by family: {}\n", family_totals_text(lines));
  }
  return out;
}

}  // namespace bertc::driver
