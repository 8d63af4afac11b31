// Benchmark: BERT pretraining steps (forward, backward, optimizer) run by the compiled plan on a
// device, on synthetic batches, timed after warm-up steps (the first one records the device
// graph and loads the kernels). Prints one JSON line: sequences/s, tokens/s, model FLOPs per
// sequence, MFU on a GPU, device memory. bench/torch_baseline.py measures PyTorch the same way
// and bench/compare.py puts them side by side; figures, never pass/fail.
//
//   bertc-bench-train CONFIG [--device cuda|host] [--batch-size B] [--seq-len S] [--steps N]
//                            [--warmup W] [--eager] [compile flags: --precision P --matmul M ...]
#include <chrono>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "codegen/host_compile.h"
#include "frontend/bert.h"
#include "passes/targets.h"
#include "run_config/config.h"
#include "train/batches.h"
#include "train/graph_runner.h"
#include "devices/device_registry.h"
#include "driver/compile_flags.h"
#include "tools/compile_flag_options.h"
#include "train/step_figures.h"
#include "tools/cli_bounds.h"

using namespace bertc;

namespace {

struct Args {
  std::string config, device = "cuda";
  driver::CompileFlags flags;
  int64_t batch_size = 0, seq_len = 0, steps = 20, warmup = 3;
  bool eager = false;
};

int run(const Args& a) {
  const frontend::ModelDefinition model = frontend::bert_model_definition();
  run_config::Config c = run_config::load_config(a.config, model.extra_keys);
  if (a.batch_size > 0) c.train.batch_size = a.batch_size;
  if (a.seq_len > 0) c.train.seq_len = a.seq_len;
  c.train.gradient_accumulation_steps = 1;
  c.compile = a.flags.apply(c.compile);
  // The device's own arch (a GPU's), or the one asked for (the host emulation's; sm_61's by default).
  const std::shared_ptr<runtime::Device> device =
      devices::open_device(a.device, {c.compile.arch.sm(), codegen::default_cache_folder()});
  const int sm = device->capabilities().sm == 0 ? 61 : device->capabilities().sm;
  c.compile.arch = passes::Arch::of_sm(sm);
  c.compile = passes::resolve_options(c.compile, c.compile.arch);
  const passes::TrainingProgram program = passes::compile_training(frontend::build_model(model, c.model_settings()), c.compile, c.train);
  support::Environment env = train::synthetic_environment(c, program, 1);
  const codegen::RenderTarget target = codegen::render_target(c.compile);
  const auto state = std::make_shared<runtime::ResidentState>(*device);
  const auto launching = a.eager ? runtime::Launching::Eager : runtime::Launching::Graph;
  const auto started = std::chrono::steady_clock::now();
  auto step = train::plan_runner(program.step, {}, target, device, state, launching);
  auto optimizer = train::plan_runner(program.optimizer, {}, target, device, state, launching);
  const double setup_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  double loss = 0;
  auto train_step = [&] {  // as bertc train runs a step without accumulation: one device graph
    loss = train::run_together(*step, *optimizer, env).first.outputs.at(0).real.at(0);
  };
  for (int64_t i = 0; i < a.warmup; ++i) train_step();
  const auto timed = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < a.steps; ++i) train_step();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - timed).count();
  // (a config of rows: its synthetic rows' tiles, as the run computed them)
  const double flops = train::model_flops_per_step(model, c, program, train::row_fractions(train::synthetic_batch(c, 1)));
  const double peak = device->capabilities().gpu ? train::peak_flops(sm, c.compile.precision) : 0;
  const double steps_per_s = static_cast<double>(a.steps) / seconds;
  nlohmann::json j{{"impl", a.eager ? "bertc-eager" : "bertc"},
                   {"config", c.name},
                   {"device", device->name()},
                   {"precision", ir::enum_name(c.compile.precision)},
                   {"matmul", ir::enum_name(c.compile.matmul)},
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
  std::vector<std::string> devices;
  for (const devices::DeviceKind& kind : devices::device_kinds()) devices.emplace_back(kind.name);
  app.add_option("--device", a.device, "cuda, or host (the emulation: a check that the benchmark runs)")
      ->check(CLI::IsMember(devices));
  tools::add_compile_flags(&app, a.flags);
  app.add_option("--batch-size", a.batch_size, "Sequences per step (default: the config's)")->check(bertc::tools::kCount);
  app.add_option("--seq-len", a.seq_len, "Tokens per sequence (default: the config's)")->check(bertc::tools::kCount);
  app.add_option("--steps", a.steps, "Timed steps")->check(bertc::tools::kCount);
  app.add_option("--warmup", a.warmup, "Untimed steps first")->check(bertc::tools::kCountOrNone);
  app.add_flag("--eager", a.eager, "Launch kernel by kernel instead of replaying a device graph");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(a);
  } catch (const std::exception& e) {
    std::cerr << "bertc-bench-train: error: " << e.what() << "\n";
    return 1;
  }
}
