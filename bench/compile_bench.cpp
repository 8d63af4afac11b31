// Benchmark: the kernels of a training step rendered and compiled with NVRTC, cold (an empty
// disk cache) and warm (the cache the cold run filled), in one run. Prints seconds and the warm
// run as a fraction of the cold one; no pass/fail.
//
//   bertc-bench-compile examples/bert-base.toml sm_80 [repeats]
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include "codegen/program.h"
#include "cuda/compile_program.h"
#include "frontend/bert.h"
#include "passes/targets.h"
#include "run_config/config.h"

using namespace bertc;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s CONFIG ARCH [REPEATS]\n", argv[0]);
    return 2;
  }
  const int repeats = argc > 3 ? std::stoi(argv[3]) : 3;
  run_config::Config c = run_config::load_config(argv[1]);
  c.compile.arch = passes::Arch::parse(argv[2]);
  c.compile = passes::resolve_options(c.compile, passes::Arch::none());
  const auto cache = std::filesystem::temp_directory_path() / "bertc-bench-compile-cache";
  double cold = 0, warm = 1e30;
  size_t kernels = 0;
  for (int r = 0; r < repeats; ++r) {
    std::filesystem::remove_all(cache);
    cuda::CompileSettings s;
    s.cache = cache;
    // Cold: passes, rendering and NVRTC for every distinct kernel; what a first `bertc compile` pays.
    auto t = std::chrono::steady_clock::now();
    const auto program = passes::compile_training(frontend::build_bert_pretraining(c.model_settings()), c.compile, c.train);
    const codegen::CompiledProgram p = cuda::compile_program(program, c.compile, c.name, "", s);
    const double cold_run = seconds_since(t);
    // Warm: the same with every kernel in the cache.
    t = std::chrono::steady_clock::now();
    const auto again = passes::compile_training(frontend::build_bert_pretraining(c.model_settings()), c.compile, c.train);
    const codegen::CompiledProgram q = cuda::compile_program(again, c.compile, c.name, "", s);
    const double warm_run = seconds_since(t);
    if (q.stats.cache_hits != q.images.size()) std::fprintf(stderr, "warning: the warm run missed the cache\n");
    cold = r == 0 ? cold_run : std::min(cold, cold_run);
    warm = std::min(warm, warm_run);
    kernels = p.images.size();
    std::printf("run %d: cold %.2f s, warm %.3f s\n", r + 1, cold_run, warm_run);
  }
  std::filesystem::remove_all(cache);
  std::printf("%s %s (%s): %zu distinct kernels; best cold %.2f s, best warm %.3f s (warm = %.1f%% of cold), %u threads\n",
              c.name.c_str(), c.compile.arch.text().c_str(), std::string(ir::enum_name(c.compile.precision)).c_str(), kernels, cold, warm, 100 * warm / cold,
              std::thread::hardware_concurrency());
  return 0;
}
