// Benchmark: BERT pretraining steps (forward, backward, optimizer) run by the compiled plan on a
// device, on synthetic batches, timed after warm-up steps (the first one records the device
// graph and loads the kernels). Prints one JSON line: sequences/s, tokens/s, model FLOPs per
// sequence, MFU on a GPU, device memory. bench/torch_baseline.py measures PyTorch the same way
// and bench/compare.py puts them side by side; figures, never pass/fail.
//
//   bertc-bench-train CONFIG [--device cuda|host] [--precision P] [--matmul M] [--batch-size B]
//                            [--seq-len S] [--steps N] [--warmup W] [--eager]
#include <chrono>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "codegen/host_compile.h"
#include "frontend/bert.h"
#include "passes/targets.h"
#include "runtime/batches.h"
#include "runtime/graph_runner.h"
#include "runtime/open_device.h"
#include "runtime/step_figures.h"

using namespace bertc;

namespace {

struct Args {
  std::string config, device = "cuda", precision, matmul, arch;
  int64_t batch_size = 0, seq_len = 0, steps = 20, warmup = 3;
  bool eager = false;
};

int run(const Args& a) {
  const frontend::ModelDefinition model = frontend::bert_model_definition();
  frontend::Config c = frontend::load_config(a.config, model.extra_keys);
  if (a.batch_size > 0) c.train.batch_size = a.batch_size;
  if (a.seq_len > 0) c.train.seq_len = a.seq_len;
  c.train.gradient_accumulation_steps = 1;
  if (!a.precision.empty()) c.compile.precision = a.precision;
  if (!a.matmul.empty()) c.compile.matmul = a.matmul;
  const auto [device, opened_sm] = runtime::open_device(a.device, runtime::sm_of_arch(a.arch), codegen::default_cache_folder());
  const int sm = opened_sm == 0 ? 61 : opened_sm;
  c.compile.arch = fmt::format("sm_{}", sm);
  c.compile = passes::resolve_options(c.compile, c.compile.arch);
  const passes::TrainingProgram program =
      passes::compile_training(frontend::build_model(model, c), c.compile, passes::optimizer_options(c.train));
  runtime::Environment env = runtime::synthetic_environment(c, program, 1);
  const codegen::RenderTarget target{sm, c.compile.matmul};
  const auto state = std::make_shared<runtime::ResidentState>(*device);
  const auto launching = a.eager ? runtime::Launching::Eager : runtime::Launching::Graph;
  const auto started = std::chrono::steady_clock::now();
  auto step = runtime::plan_runner(program.step, {}, target, device, state, launching);
  auto optimizer = runtime::plan_runner(program.optimizer, {}, target, device, state, launching);
  const double setup_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  double loss = 0;
  auto train_step = [&] {  // as bertc train runs a step without accumulation: one device graph
    loss = runtime::run_together(*step, *optimizer, env).first.outputs.at(0).real.at(0);
  };
  for (int64_t i = 0; i < a.warmup; ++i) train_step();
  const auto timed = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < a.steps; ++i) train_step();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - timed).count();
  const double flops = runtime::model_flops_per_step(model, c, program);
  const double peak = a.device == "cuda" ? runtime::peak_flops(sm, c.compile.precision) : 0;
  const double steps_per_s = static_cast<double>(a.steps) / seconds;
  nlohmann::json j{{"impl", a.eager ? "bertc-eager" : "bertc"},
                   {"config", c.name},
                   {"device", device->name()},
                   {"precision", c.compile.precision},
                   {"matmul", c.compile.matmul},
                   {"batch_size", c.train.batch_size},
                   {"seq_len", c.train.seq_len},
                   {"steps", a.steps},
                   {"seconds", seconds},
                   {"setup_seconds", setup_seconds},
                   {"sequences_per_second", steps_per_s * static_cast<double>(c.train.batch_size)},
                   {"tokens_per_second", steps_per_s * static_cast<double>(c.train.batch_size * c.train.seq_len)},
                   {"model_flops_per_sequence", flops / static_cast<double>(c.train.batch_size)},
                   {"device_memory_bytes", device->allocated_bytes()},
                   {"last_loss", loss}};
  if (peak > 0) j["mfu"] = flops * steps_per_s / peak;
  std::cout << j.dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("bertc-bench-train: BERT pretraining steps on a device, timed", "bertc-bench-train");
  Args a;
  app.add_option("config", a.config, "TOML config")->required()->check(CLI::ExistingFile);
  app.add_option("--device", a.device, "cuda, or host (the emulation: a check that the benchmark runs)")
      ->check(CLI::IsMember({"cuda", "host"}));
  app.add_option("--arch", a.arch, "host: the arch whose kernels run (default sm_61)");
  app.add_option("--precision", a.precision, "fp32, fp16, bf16 (default: the config's, auto for the GPU)");
  app.add_option("--matmul", a.matmul, "auto, generated or library")->check(CLI::IsMember({"auto", "generated", "library"}));
  app.add_option("--batch-size", a.batch_size, "Sequences per step (default: the config's)")->check(CLI::PositiveNumber);
  app.add_option("--seq-len", a.seq_len, "Tokens per sequence (default: the config's)")->check(CLI::PositiveNumber);
  app.add_option("--steps", a.steps, "Timed steps")->check(CLI::PositiveNumber);
  app.add_option("--warmup", a.warmup, "Untimed steps first")->check(CLI::NonNegativeNumber);
  app.add_flag("--eager", a.eager, "Launch kernel by kernel instead of replaying a device graph");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(a);
  } catch (const std::exception& e) {
    std::cerr << "bertc-bench-train: error: " << e.what() << "\n";
    return 1;
  }
}
