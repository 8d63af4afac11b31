// Benchmark: the PTX emulator's speed. Runs every launch of a bert-tiny training step and optimizer
// step from NVRTC's PTX on the emulator, and the same launches compiled for the host under host
// emulation (the baseline, in the same run), and prints thread-instructions per second inside the
// emulator and the ratio of the two runs' times. No pass/fail; one core (the emulator is serial).
//
//   bertc-bench-ptx [--targets sm_61:fp32,sm_80:bf16] [--cache DIR] [--dump-ptx DIR]
#include <cstdio>
#include <filesystem>
#include <fstream>
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
    fmt::print("{:<12} {:>9} {:>14} {:>11.2f} {:>11.1f} {:>11.2f} {:>8.0f}x\n", t, run.step.size() + run.optimizer.size(),
               run.counts.thread_instructions, run.emulator_seconds,
               static_cast<double>(run.counts.thread_instructions) / run.emulator_seconds / 1e6, host,
               run.checked_seconds / host);
  }
  fmt::print("(ratio: the seconds of every launch with the harness's set-up and comparisons, on the emulator over "
             "under host emulation)\n");
  for (const auto& [target, counts] : classes) {
    std::vector<std::string> parts;
    for (size_t c = 0; c < ptx::kInstructionClasses; ++c)
      if (counts.by_class[c])
        parts.push_back(fmt::format("{} {:.1f}%", ptx::class_name(static_cast<ptx::InstructionClass>(c)),
                                    100.0 * static_cast<double>(counts.by_class[c]) /
                                        static_cast<double>(counts.thread_instructions)));
    auto times = [](uint64_t got, uint64_t ideal) { return ideal ? static_cast<double>(got) / static_cast<double>(ideal) : 0.0; };
    fmt::print("{}: {:.3g} GFLOP counted; thread-instructions by class: {}; shared memory: {} warp requests, {} "
               "wavefronts where {} are conflict-free ({:.2f}x); global memory: {} warp requests, {} sectors of 32 "
               "bytes where {} hold their bytes ({:.2f}x)\n",
               target, counts.flops / 1e9, fmt::join(parts, ", "), counts.shared_requests, counts.shared_wavefronts,
               counts.shared_ideal_wavefronts, times(counts.shared_wavefronts, counts.shared_ideal_wavefronts),
               counts.global_requests, counts.global_sectors, counts.global_ideal_sectors,
               times(counts.global_sectors, counts.global_ideal_sectors));
  }
}
