// `bertc check` (see check.h).
#include "tools/check.h"

#include <fmt/format.h>

#include "codegen/host_compile.h"
#include "passes/pipeline.h"
#include "runtime/batches.h"
#include "runtime/cuda_device.h"
#include "runtime/host_device.h"
#include "runtime/initialize.h"
#include "runtime/reference/executor.h"
#include "runtime/step_check.h"

namespace bertc::tools {
namespace {

// fp32: kernels sum in other orders than the reference (measured up to ~8e-6 of a tensor's scale
// through the backward of bert-tiny); 16-bit: a rounding flip in an early activation moves later
// values by a few ulps of 2^-8..2^-11 (measured up to 9e-3). Both far below the order-1 errors of
// a wrong kernel. The same fraction of an op's operands is the floor a result is measured
// against: a bias gradient that cancels to noise (the key's) is rounding noise of its operands
// (measured 4e-5 of them in bf16).
double default_tolerance(const std::string& precision) { return precision == "fp32" ? 1e-3 : 5e-2; }

// Prints one graph's comparison; returns whether every value is within tolerance.
bool report(const std::string& graph, const runtime::GraphCheck& c, double tolerance, bool all, std::ostream& out) {
  const size_t first = c.first_beyond(tolerance);
  size_t beyond = 0, worst = 0;
  for (size_t i = 0; i < c.values.size(); ++i) {
    const runtime::ValueCheck& v = c.values[i];
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

int run_check(const frontend::ModelDefinition& model, const frontend::Config& config, const CheckOptions& o,
              std::ostream& out) {
  std::unique_ptr<runtime::Device> device;
  int sm = 0;
  if (o.device == "cuda") {
    auto gpu = std::make_unique<runtime::CudaDevice>(0, codegen::default_cache_folder());
    sm = gpu->arch();
    device = std::move(gpu);
  } else if (o.device == "host") {
    const std::string& arch = config.compile.arch;
    sm = arch.rfind("sm_", 0) == 0 ? std::stoi(arch.substr(3)) : 0;
    device = std::make_unique<runtime::HostDevice>(codegen::default_cache_folder());
  } else {
    throw std::invalid_argument(fmt::format("no device '{}' to check on: host or cuda", o.device));
  }
  const passes::TrainingProgram program = passes::compile_training(
      frontend::build_model(model, config), config.compile, passes::optimizer_options(config.train));
  runtime::Environment env;
  runtime::initialize_parameters(program.step, config.model.initializer_range, config.model.pad_token_id,
                                 static_cast<uint64_t>(config.train.seed), env);
  runtime::initialize_states(program.step, env);
  runtime::initialize_states(program.optimizer, env);
  runtime::bind_batch(runtime::synthetic_batch(config, static_cast<uint64_t>(config.train.seed)), env);
  env["dropout_seed"] = reference::HostTensor<float>::scalar(ir::DType::I64, 20261130);
  env["learning_rate"] = reference::HostTensor<float>::scalar(ir::DType::F32, config.train.learning_rate);
  const double tolerance = o.tolerance.value_or(default_tolerance(config.compile.precision));
  const codegen::RenderTarget target{sm, config.compile.matmul};
  out << fmt::format("check: {} on {}, {} precision, sm_{} kernels, matmul {}\n", config.name, device->name(),
                     config.compile.precision, sm == 0 ? 61 : sm, config.compile.matmul);
  const bool step_ok = report("step", runtime::check_graph(program.step, target, *device, env, tolerance), tolerance, o.all, out);
  // The optimizer step starts from the reference's gradients, so that its check is its own.
  reference::Executor<float>(program.step).run(env);
  const bool optimizer_ok =
      report("optimizer", runtime::check_graph(program.optimizer, target, *device, env, tolerance), tolerance, o.all, out);
  return step_ok && optimizer_ok ? 0 : 1;
}

}  // namespace bertc::tools
