// Choosing the micro-batch from device memory (see micro_batch.h).
#include "train/micro_batch.h"

#include "support/file_errors.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "codegen/library_gemm.h"
#include "codegen/render.h"
#include "runtime/plan_layout.h"

namespace bertc::train {
namespace {

double mib(uint64_t bytes) { return static_cast<double>(bytes) / double(uint64_t{1} << 20); }

// Params and states: one buffer each, shared by the step and optimizer graphs.
bool resident(ir::OpKind k) { return k == ir::OpKind::Param || k == ir::OpKind::State; }

}  // namespace

PlannedMemory planned_device_memory(const passes::TrainingProgram& program, const codegen::RenderTarget& target) {
  PlannedMemory planned;
  std::set<std::string> resident_names;
  for (const ir::Graph* g : {&program.step, &program.optimizer}) {
    const codegen::GraphKernels kernels = codegen::render_graph(*g, target);
    const runtime::PlanLayout layout(*g, kernels.arena);
    planned.bytes += static_cast<uint64_t>(layout.arena().bytes);
    for (ir::ValueId v : layout.owned()) {
      const ir::Value& value = g->value(v);
      if (resident(g->producer(v).kind) && !resident_names.insert(value.name).second) continue;
      planned.bytes += static_cast<uint64_t>(value.type.bytes());
    }
    uint64_t workspace = 0;  // one per graph, as large as its largest launch's (as PlanExecutor allocates)
    for (const codegen::KernelSpec& k : kernels.kernels) {
      planned.cublas = planned.cublas || k.library.has_value();
      for (const codegen::KernelParam& p : k.params) {
        if (p.kind == codegen::ParamKind::Scratch) planned.bytes += p.scratch_bytes;
        if (p.kind == codegen::ParamKind::Workspace) workspace = std::max<uint64_t>(workspace, p.scratch_bytes);
      }
    }
    planned.bytes += workspace;
  }
  if (planned.cublas) planned.bytes += codegen::kLibraryWorkspaceBytes;
  return planned;
}

uint64_t resident_bytes(const passes::TrainingProgram& program) {
  uint64_t bytes = 0;
  std::set<std::string> counted;
  for (const ir::Graph* g : {&program.step, &program.optimizer})
    for (const ir::Op& op : g->ops())
      if (resident(op.kind))
        for (ir::ValueId v : op.results)
          if (counted.insert(g->value(v).name).second) bytes += static_cast<uint64_t>(g->value(v).type.bytes());
  return bytes;
}

std::string weights_do_not_fit(const passes::TrainingProgram& program, uint64_t available,
                               const std::string& available_what) {
  const uint64_t resident = resident_bytes(program);
  if (resident <= available) return "";
  int64_t params = 0;
  for (ir::ValueId p : program.step.values_of(ir::OpKind::Param)) params += program.step.value(p).type.numel();
  return fmt::format("the model's weights and optimizer state alone take {} ({} params), more than the {} {}, "
                     "whatever the batch: train a smaller [model] (hidden_size, intermediate_size, num_hidden_layers, "
                     "vocab_size), or on a machine or device with more memory",
                     support::size_text(resident), params, support::size_text(available), available_what);
}

MicroBatch choose_micro_batch(const frontend::ModelDefinition& model, const run_config::Config& config,
                              const codegen::RenderTarget& target, uint64_t available, std::ostream& log) {
  const run_config::TrainConfig& t = config.train;
  const int64_t global = t.batch_size * t.gradient_accumulation_steps;
  const uint64_t reserve = std::min<uint64_t>(available / 20, uint64_t{256} << 20);
  const uint64_t usable = available - reserve;
  bool cublas = false;
  for (int64_t b = global; b >= 1; --b) {
    if (global % b != 0) continue;
    run_config::Config c = config;
    c.train.batch_size = b;
    c.train.gradient_accumulation_steps = global / b;
    const passes::TrainingProgram p =
        passes::compile_training(frontend::build_model(model, c.model_settings()), c.compile, c.train);
    // (before any kernel is rendered for the size: a model past the memory is said as that, not
    // as a launch past a GPU's grid)
    if (const std::string too_large = weights_do_not_fit(p, usable, "usable"); !too_large.empty())
      throw std::runtime_error("batch-size auto: " + too_large);
    const PlannedMemory need = planned_device_memory(p, target);
    const bool fits = need.bytes <= usable;
    log << fmt::format("batch-size auto: micro-batch {} x {} needs {:.2f} MiB of {:.2f} MiB usable{}\n", b, global / b,
                       mib(need.bytes), mib(usable), fits ? ": chosen" : "");
    if (fits) return {b, global / b, need.bytes};
    cublas = need.cublas;  // (of the smallest, when none fits)
  }
  throw std::runtime_error(fmt::format(
      "batch-size auto: not even a micro-batch of 1 fits the {:.2f} MiB usable: {}{}a shorter [train] seq_len, or a "
      "smaller model",
      mib(usable),
      cublas ? fmt::format("cuBLAS's workspace alone takes {:.0f} MiB, which --matmul generated (products by "
                            "generated kernels) leaves out; or ",
                            mib(codegen::kLibraryWorkspaceBytes))
              : "",
      config.compile.recompute != passes::RecomputePolicy::Full ? "use --recompute full, " : ""));
}

}  // namespace bertc::train
