// `bertc check` (see check.h).
#include "driver/check.h"

#include <fmt/format.h>

#include "codegen/host_compile.h"
#include "codegen/render.h"
#include "driver/compiled_program.h"
#include "driver/ptx_counts.h"
#include "passes/cost_model.h"
#include "passes/pipeline.h"
#include "reference/executor.h"
#include "run_folder/stop_request.h"
#include "devices/device_registry.h"
#include "runtime/device_target.h"
#include "runtime/emulator_controls.h"
#include "runtime/plan_executor.h"
#include "train/batches.h"
#include "train/step_check.h"
#include "train/step_figures.h"

namespace bertc::driver {
namespace {

// fp32: kernels sum in other orders than the reference (measured up to ~7e-6 of a tensor's scale
// through the backward of bert-tiny); 16-bit: a rounding flip in an early activation moves later
// values by a few ulps of 2^-8..2^-11 (measured up to 1.0e-2). Both far below the order-1 errors of
// a wrong kernel. The same fraction of an op's operands is the floor a result is measured
// against: a bias gradient that cancels to noise (the key's) is rounding noise of its operands
// (measured 4e-5 of them in bf16). tf32: f32 values, but products of inputs rounded to 10
// mantissa bits, 2^-10 of their terms each, piling up through the backward to 1.3e-3 of a
// tensor's scale in bert-tiny (tests/kernels/host_runner_test.cpp): 1e-2.
double default_tolerance(passes::Precision precision) {
  switch (precision) {
    case passes::Precision::Fp32: return 1e-3;
    case passes::Precision::Tf32: return 1e-2;
    default: return 5e-2;
  }
}

// Prints one graph's comparison; returns whether every value is within tolerance.
bool report(const std::string& graph, const train::GraphCheck& c, double tolerance, bool all, std::ostream& out) {
  const size_t first = c.first_beyond(tolerance);
  size_t beyond = 0, worst = 0;
  for (size_t i = 0; i < c.values.size(); ++i) {
    const train::ValueCheck& v = c.values[i];
    const bool bad = !(v.error <= tolerance);
    beyond += bad;
    if (!(v.error <= c.values[worst].error)) worst = i;
    if (bad || all)
      out << fmt::format("{} {:>9.2e} {}{}\n", bad ? "BEYOND" : "ok    ", v.error, v.what,
                         i == first ? "   <- first beyond tolerance" : "");
  }
  out << fmt::format("{}: {} values compared, largest error {:.2e} ({}), {} beyond {:g}\n", graph, c.values.size(),
                     c.values.empty() ? 0.0 : c.values[worst].error, c.values.empty() ? "-" : c.values[worst].what,
                     beyond, tolerance);
  // (a reference of NaN compares as an error of 0: every value NaN passed, "largest error 0")
  const auto diverged = std::find_if(c.values.begin(), c.values.end(), [](const train::ValueCheck& v) { return v.not_finite > 0; });
  if (diverged != c.values.end()) {
    const size_t values = static_cast<size_t>(
        std::count_if(c.values.begin(), c.values.end(), [](const train::ValueCheck& v) { return v.not_finite > 0; }));
    out << fmt::format("{}: {} of the values are NaN or infinite in the reference itself, first {} ({} elements): "
                       "there nothing was compared, and the check does not pass; the config's numbers overflow "
                       "before any kernel runs (bertc train --device cpu says why): check a config the reference "
                       "trains\n",
                       graph, values, diverged->what, diverged->not_finite);
    return false;
  }
  return beyond == 0;
}

}  // namespace

namespace {

// Whether check's emulator flags (--sample-blocks, --schedule-seed, --resident-blocks, --approx)
// apply to device `name` (the device table says), and "--device ptx": the devices they apply to.
bool emulator_flags_apply(const std::string& name) { return devices::device_kind(name).emulator_controls; }
std::string emulator_devices() {
  std::vector<std::string> names;
  for (const devices::DeviceKind& kind : devices::device_kinds())
    if (kind.emulator_controls) names.push_back(fmt::format("--device {}", kind.name));
  return fmt::format("{}", fmt::join(names, " or "));
}

// The cost model's roofline of the PTX device's launches: the first `step_launches` of `program`'s
// step, the rest of its optimizer step; an attention over rows at `rows` (the batch's).
RooflineOf roofline_of(const passes::TrainingProgram& program, const runtime::EmulatorControls& emulator,
                       size_t step_launches, passes::Precision precision, const passes::RowFractions& rows) {
  return [&program, &emulator, step_launches, precision, rows](size_t i, const passes::GpuSpec& gpu) {
    const ir::Graph& graph = i < step_launches ? program.step : program.optimizer;
    return passes::launch_cost(graph, graph.ops().at(emulator.launches().at(i).op_index), gpu, precision, rows).seconds;
  };
}

// What the synthetic batch check runs on (synthetic_environment's, of the config's seed) leaves an
// attention over rows to compute.
passes::RowFractions batch_rows(const run_config::Config& config) {
  return train::row_fractions(train::synthetic_batch(config, static_cast<uint64_t>(config.train.seed)));
}

// A projection's run (--sample-blocks): both graphs on the PTX device with their launches sampled,
// and their counts. No value is compared: the blocks not run leave their results unwritten, and
// the optimizer step reads zero gradients (its work does not depend on their values).
int count_program(const passes::TrainingProgram& program, const train::KernelsFor& step_kernels,
                  const train::KernelsFor& optimizer_kernels, runtime::Device& device, runtime::EmulatorControls& emulator,
                  const run_config::Config& config, const CheckOptions& o, std::ostream& out) {
  support::Environment env = train::synthetic_environment(config, program, static_cast<uint64_t>(config.train.seed));
  emulator.sample_blocks(o.sample_blocks);
  out << fmt::format("check: {} on {}, {} precision, matmul {}; counting only: at most {} blocks of each launch run "
                     "(--sample-blocks), so no value is compared — the checkers run on the blocks that do\n",
                     config.name, device.name(), ir::enum_name(config.compile.precision),
                     ir::enum_name(config.compile.matmul), o.sample_blocks);
  runtime::PlanExecutor(program.step, step_kernels(program.step), device).run(env);
  const size_t step_launches = emulator.launches().size();
  for (ir::ValueId v : program.optimizer.values_of(ir::OpKind::Input)) {
    const ir::Value& value = program.optimizer.value(v);
    if (!env.count(value.name)) env[value.name] = support::HostTensor::zeros(value.type);
  }
  runtime::PlanExecutor(program.optimizer, optimizer_kernels(program.optimizer), device).run(env);
  out << fmt::format("step: {} launches, optimizer: {} launches, run without a checker's finding\n", step_launches,
                     emulator.launches().size() - step_launches);
  out << ptx_counts_text(emulator.launches(), device.capabilities().sm, config.compile.precision, emulator.registers_known(),
                         roofline_of(program, emulator, step_launches, config.compile.precision, batch_rows(config)));
  return 0;
}

// Both graphs of `program` checked on `device`, the optimizer's from the reference's gradients.
int check_program(const passes::TrainingProgram& program, const train::KernelsFor& step_kernels,
                  const train::KernelsFor& optimizer_kernels, runtime::Device& device, const run_config::Config& config,
                  const CheckOptions& o, std::ostream& out) {
  runtime::EmulatorControls* emulated = device.emulator_controls();
  if (emulated) {
    const ptx::ApproxResults approx = o.approx.value_or(ptx::ApproxResults::WorstCase);
    emulated->approximations(approx);
    const uint64_t seed = o.schedule_seed.value_or(1);
    const uint32_t resident = o.resident_blocks.value_or(4);
    emulated->schedule_seed(seed);
    emulated->resident_blocks(resident);
    out << fmt::format("schedule: seed {} ({})\n", seed,
                       seed == 0 ? "blocks, warps and lanes in index order, a block at a time"
                                 : fmt::format("blocks, warps and lanes in a shuffled order, {} (--resident-blocks), "
                                               "warps interleaved from sm_70 on; --schedule-seed N for another",
                                               resident == 1 ? "one block at a time"
                                                             : fmt::format("{} blocks side by side with their warps' "
                                                                           "turns interleaved",
                                                                           resident)));
    out << (approx == ptx::ApproxResults::WorstCase
                ? "approximate instructions (ex2, rsqrt, tanh, division, ...): each result at the edge of the PTX ISA's "
                  "error bound, up or down (--approx worst; ptx/approximations.h)\n"
                : "approximate instructions (ex2, rsqrt, tanh, division, ...): correctly rounded (--approx rounded; a "
                  "GPU's may be off by up to the PTX ISA's bounds)\n");
  }
  if (!emulated && (o.schedule_seed || o.resident_blocks || o.approx))
    throw std::logic_error(fmt::format("the device table offers the emulator's flags for --device {}, whose device "
                                       "({}) has no emulator controls",
                                       o.device, device.name()));
  if (o.sample_blocks > 0) {
    if (!emulated)
      throw std::invalid_argument(fmt::format("--sample-blocks samples the launches of the PTX emulator, and the "
                                              "device is the {}: check with {} (in place of the --device given, or host, check's default)",
                                              device.name(), emulator_devices()));
    return count_program(program, step_kernels, optimizer_kernels, device, *emulated, config, o, out);
  }
  support::Environment env = train::synthetic_environment(config, program, static_cast<uint64_t>(config.train.seed));
  const double tolerance = o.tolerance.value_or(default_tolerance(config.compile.precision));
  // The floor a result is measured against is the precision's rounding noise of its operands,
  // whatever --tolerance says: with the tolerance as the floor's fraction, the error reported
  // changed with the tolerance asked for (1e300 made every error ~1e-305).
  const double noise = default_tolerance(config.compile.precision);
  const int sm = device.capabilities().sm;
  out << fmt::format("check: {} on {}, {} precision, sm_{} kernels, matmul {}\n", config.name, device.name(),
                     ir::enum_name(config.compile.precision), sm == 0 ? 61 : sm, ir::enum_name(config.compile.matmul));
  const bool step_ok = report("step", train::check_graph(program.step, step_kernels, device, env, noise), tolerance, o.all, out);
  const size_t step_launches = emulated ? emulated->launches().size() : 0;
  // The optimizer step starts from the reference's gradients, so that its check is its own.
  reference::Executor<float>(program.step).run(env);
  const bool optimizer_ok = report(
      "optimizer", train::check_graph(program.optimizer, optimizer_kernels, device, env, noise), tolerance, o.all, out);
  if (emulated)
    out << ptx_counts_text(emulated->launches(), device.capabilities().sm, config.compile.precision,
                           emulated->registers_known(),
                           roofline_of(program, *emulated, step_launches, config.compile.precision, batch_rows(config)));
  return step_ok && optimizer_ok ? 0 : 1;
}

// The device to check on, and what to do instead when it cannot be had.
std::shared_ptr<runtime::Device> open_check_device(const run_config::Config& config, const CheckOptions& o, bool compiled) {
  if (o.sample_blocks > 0 && !emulator_flags_apply(o.device))
    throw std::invalid_argument(fmt::format("--sample-blocks samples the launches of the PTX emulator, and the device "
                                            "is {}: check with {} (in place of --device {})",
                                            o.device, emulator_devices(), o.device));
  if (o.schedule_seed && !emulator_flags_apply(o.device))
    throw std::invalid_argument(fmt::format("--schedule-seed orders the PTX emulator's blocks, warps and lanes, and the "
                                            "device is {}: check with {} (in place of --device {})",
                                            o.device, emulator_devices(), o.device));
  if (o.resident_blocks && !emulator_flags_apply(o.device))
    throw std::invalid_argument(fmt::format("--resident-blocks runs the PTX emulator's blocks side by side, and the "
                                            "device is {}: check with {} (in place of --device {})",
                                            o.device, emulator_devices(), o.device));
  if (o.resident_blocks && o.schedule_seed == 0u)
    throw std::invalid_argument("--resident-blocks runs blocks side by side in a seeded order, and --schedule-seed 0 "
                                "runs them in index order, one at a time: give a seed other than 0, or drop "
                                "--resident-blocks");
  if (o.approx && !emulator_flags_apply(o.device))
    throw std::invalid_argument(fmt::format("--approx sets how the PTX emulator makes the approximate instructions' "
                                            "results, and the device is {}: check with {} (in place of --device {})",
                                            o.device, emulator_devices(), o.device));
  runtime::DeviceRequest r{config.compile.arch.sm(), codegen::default_cache_folder()};
  r.instead = "check the kernels under emulation with --device host (check's default), or where a GPU is";
  r.older_gpu = compiled ? "compile it for this GPU (bertc compile CONFIG --arch sm_{} -o FILE.bertx)"
                         : "check with --arch auto (or --arch sm_{})";
  return devices::open_device(o.device, r);
}

}  // namespace

int run_check(const frontend::ModelDefinition& model, const run_config::Config& config, const CheckOptions& o,
              std::ostream& out) {
  const std::shared_ptr<runtime::Device> device = open_check_device(config, o, false);
  const passes::TrainingProgram program =
      passes::compile_training(frontend::build_model(model, config.model_settings()), config.compile, config.train);
  std::string note;
  const codegen::RenderTarget target = runtime::device_render_target(config.compile, device->capabilities(), &note);
  if (!note.empty()) out << note << "\n";
  const train::KernelsFor rendered = [&](const ir::Graph& kept) { return codegen::render_graph(kept, target); };
  return check_program(program, rendered, rendered, *device, config, o, out);
}

int run_check(const codegen::CompiledProgram& compiled, const run_config::Config& config, const CheckOptions& o,
              std::ostream& out) {
  const std::shared_ptr<runtime::Device> device = open_check_device(config, o, true);
  device->use_images(compiled.images, compiled.nvrtc_version);
  const passes::TrainingProgram program = codegen::graphs_of(compiled);
  // The program's launches; the check keeps more values to the end, so the arena is the kept graph's.
  auto as_compiled = [](const codegen::GraphKernels& kernels) {
    return [&kernels](const ir::Graph& kept) {
      codegen::GraphKernels k = kernels;
      k.arena = codegen::arena_layout(kept);
      return k;
    };
  };
  return check_program(program, as_compiled(compiled.step), as_compiled(compiled.optimizer), *device, config, o, out);
}

int check(const std::string& file, const CompileFlags& flags, const CheckOptions& options,
          const frontend::ModelDefinition& model, std::ostream& out) {
  // A check writes nothing but its report (kernel-cache entries are written whole or not at all):
  // a signal ends it at once, saying so.
  const run_folder::StopOnSignal ends_at_once(nullptr, "check ended by a signal before its verdict: nothing was "
                                                  "half-written (it writes only its report); run the same command "
                                                  "again");
  if (const std::optional<codegen::CompiledProgram> p = compiled_program_in(file))
    return run_check(*p, compiled_config(*p, file, flags, model), options, out);
  run_config::Config config = run_config::load_config(file, model.extra_keys);
  config.compile = resolve_here(flags.apply(config.compile));
  return run_check(model, config, options, out);
}

}  // namespace bertc::driver
