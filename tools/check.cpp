// `bertc check` (see check.h).
#include "tools/check.h"

#include <fmt/format.h>

#include "codegen/host_compile.h"
#include "codegen/render.h"
#include "passes/pipeline.h"
#include "train/batches.h"
#include "runtime/device_registry.h"
#include "runtime/device_target.h"
#include "runtime/ptx_device.h"
#include "tools/ptx_counts.h"
#include "reference/executor.h"
#include "train/step_check.h"

namespace bertc::tools {
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
  return beyond == 0;
}

}  // namespace

namespace {

// Both graphs of `program` checked on `device`, the optimizer's from the reference's gradients.
int check_program(const passes::TrainingProgram& program, const train::KernelsFor& step_kernels,
                  const train::KernelsFor& optimizer_kernels, runtime::Device& device, const frontend::Config& config,
                  const CheckOptions& o, std::ostream& out) {
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
  // The optimizer step starts from the reference's gradients, so that its check is its own.
  reference::Executor<float>(program.step).run(env);
  const bool optimizer_ok = report(
      "optimizer", train::check_graph(program.optimizer, optimizer_kernels, device, env, noise), tolerance, o.all, out);
  if (const auto* emulated = dynamic_cast<const runtime::PtxDevice*>(&device))
    out << ptx_counts_text(emulated->launches(), emulated->capabilities().sm, config.compile.precision,
                           emulated->registers_known());
  return step_ok && optimizer_ok ? 0 : 1;
}

// The device to check on, and what to do instead when it cannot be had.
std::shared_ptr<runtime::Device> open_check_device(const frontend::Config& config, const CheckOptions& o, bool compiled) {
  runtime::DeviceRequest r{config.compile.arch.sm(), codegen::default_cache_folder()};
  r.instead = "check the kernels under emulation with --device host (check's default), or where a GPU is";
  r.older_gpu = compiled ? "compile it for this GPU (bertc compile CONFIG --arch sm_{} -o FILE.bertx)"
                         : "check with --arch auto (or --arch sm_{})";
  return runtime::open_device(o.device, r);
}

}  // namespace

int run_check(const frontend::ModelDefinition& model, const frontend::Config& config, const CheckOptions& o,
              std::ostream& out) {
  const std::shared_ptr<runtime::Device> device = open_check_device(config, o, false);
  const passes::TrainingProgram program =
      passes::compile_training(frontend::build_model(model, config), config.compile, config.train);
  std::string note;
  const codegen::RenderTarget target = runtime::device_render_target(config.compile, device->capabilities(), &note);
  if (!note.empty()) out << note << "\n";
  const train::KernelsFor rendered = [&](const ir::Graph& kept) { return codegen::render_graph(kept, target); };
  return check_program(program, rendered, rendered, *device, config, o, out);
}

int run_check(const codegen::CompiledProgram& compiled, const frontend::Config& config, const CheckOptions& o,
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

}  // namespace bertc::tools
