// Benchmark: the PTX emulator's speed. Runs every launch of a bert-tiny training step and optimizer
// step from NVRTC's PTX on the emulator, and the same launches compiled for the host under host
// emulation (the baseline, in the same run), and prints thread-instructions per second inside the
// emulator and the ratio of the two runs' times. No pass/fail; one core (the emulator is serial).
//
//   bertc-bench-ptx [--targets sm_61:fp32,sm_80:bf16] [--cache DIR] [--dump-ptx DIR]
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/enum_names.h"
#include "ptx_step.h"

using namespace bertc;

int main(int argc, char** argv) {
  CLI::App app{"The PTX emulator's speed on a bert-tiny step, against host emulation of the same kernels"};
  std::vector<std::string> targets{"sm_61:fp32", "sm_80:bf16"};
  std::string cache = "/tmp/bertc-bench-ptx-cache";
  app.add_option("--targets", targets, "ARCH:PRECISION pairs (sm_61:fp32 sm_70:fp16 sm_80:tf32 ...)")->delimiter(',');
  app.add_option("--cache", cache, "where compiled kernels are cached");
  std::string dump;
  app.add_option("--dump-ptx", dump, "write each target's PTX module (as the emulator ran it) into this folder");
  CLI11_PARSE(app, argc, argv);
  std::vector<std::pair<std::string, ptx::LaunchCounts>> classes;
  std::vector<std::string> projections;  // per target and GPU of its arch: the step projected beside the roofline
  fmt::print("{:<12} {:>9} {:>14} {:>11} {:>11} {:>11} {:>9}\n", "target", "launches", "thread-instr", "emulator s",
             "M instr/s", "host-emu s", "ratio");
  for (const std::string& t : targets) {
    const size_t colon = t.find(':');
    if (t.rfind("sm_", 0) != 0 || colon == std::string::npos) {
      fmt::print(stderr, "--targets: '{}' is not ARCH:PRECISION (e.g. sm_80:bf16)\n", t);
      return 2;
    }
    testing::PtxStep step;
    step.sm = std::stoi(t.substr(3, colon - 3));
    const auto precision = ir::enum_from_name<passes::Precision>(t.substr(colon + 1));
    if (!precision) {
      fmt::print(stderr, "--targets: '{}' names no precision\n", t.substr(colon + 1));
      return 2;
    }
    step.precision = *precision;
    step.timed = true;  // (latency-aware projections below)
    if (!dump.empty())
      step.mutate = [&](const std::string& ptx) {
        std::filesystem::create_directories(dump);
        std::ofstream(std::filesystem::path(dump) / fmt::format("bert-tiny-{}.ptx", t.substr(0, colon) + "-" +
                                                                                       t.substr(colon + 1)))
            << ptx;
        return ptx;
      };
    const testing::PtxStepRun run = testing::run_step_on_ptx(step, cache);
    const double host = testing::run_step_on_host(step, cache);
    classes.emplace_back(t, run.counts);
    for (const passes::GpuSpec& gpu : passes::gpu_specs()) {
      if (gpu.arch != step.sm) continue;
      const ptx::GpuRates rates = testing::rates_of(gpu, step.precision);
      double projected = 0, roofline = 0, occupied = 0;
      std::map<std::string, double> by_bound;
      for (const testing::PtxLaunch& l : run.launches) {
        const ptx::Projection p = ptx::project(l.counts, rates);
        projected += p.seconds;
        by_bound[std::string(ptx::bound_name(p.bound))] += p.seconds;
        roofline += l.roofline_seconds.at(std::string(gpu.name));
        // (registers not known from PTX: the share threads and shared memory allow, at most)
        occupied += p.seconds * ptx::occupancy(l.counts.block_threads, l.counts.block_shared_bytes, 0, rates).warps_share;
      }
      std::vector<std::string> bounds;
      for (const auto& [bound, seconds] : by_bound) bounds.push_back(fmt::format("{} {:.0f}%", bound, 100 * seconds / projected));
      projections.push_back(fmt::format("{} on {}: projected {:.3f} ms a step (bound by {}), the compile report's "
                                        "roofline {:.3f} ms ({:.2f}x); occupancy {:.0f}% of a multiprocessor's warps "
                                        "at most, weighted by time",
                                        t, gpu.title, projected * 1e3, fmt::join(bounds, ", "), roofline * 1e3,
                                        roofline > 0 ? projected / roofline : 0.0, 100 * occupied / projected));
    }
    fmt::print("{:<12} {:>9} {:>14} {:>11.2f} {:>11.1f} {:>11.2f} {:>8.0f}x\n", t, run.step.size() + run.optimizer.size(),
               run.counts.thread_instructions, run.emulator_seconds,
               static_cast<double>(run.counts.thread_instructions) / run.emulator_seconds / 1e6, host,
               run.checked_seconds / host);
  }
  fmt::print("(ratio: the seconds of every launch with the harness's set-up and comparisons, on the emulator over "
             "under host emulation)\n");
  for (const auto& [target, counts] : classes) {
    auto times = [](uint64_t got, uint64_t ideal) { return ideal ? static_cast<double>(got) / static_cast<double>(ideal) : 0.0; };
    fmt::print("{}: {:.3g} GFLOP counted; thread-instructions by class: {}; shared memory: {} warp requests, {} "
               "wavefronts where {} are conflict-free ({:.2f}x); global memory: {} warp requests, {} sectors of 32 "
               "bytes where {} hold their bytes ({:.2f}x)\n",
               target, counts.flops / 1e9, driver::class_shares_text(counts), counts.shared_requests, counts.shared_wavefronts,
               counts.shared_ideal_wavefronts, times(counts.shared_wavefronts, counts.shared_ideal_wavefronts),
               counts.global_requests, counts.global_sectors, counts.global_ideal_sectors,
               times(counts.global_sectors, counts.global_ideal_sectors));
  }
  fmt::print("(projections from the counts, each launch's slowest part at the GPU's datasheet rates with no cache "
             "modelled: ptx/projection.h; not measurements)\n");
  for (const std::string& line : projections) fmt::print("{}\n", line);
}
