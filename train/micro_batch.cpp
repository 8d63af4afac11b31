// Choosing the micro-batch from device memory (see micro_batch.h).
#include "train/micro_batch.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "codegen/render.h"
#include "runtime/plan_layout.h"

namespace bertc::train {
namespace {

constexpr uint64_t kCublasWorkspace = uint64_t{32} << 20;  // as the CUDA device sets it

double mib(uint64_t bytes) { return static_cast<double>(bytes) / double(uint64_t{1} << 20); }

// Params and states: one buffer each, shared by the step and optimizer graphs.
bool resident(ir::OpKind k) { return k == ir::OpKind::Param || k == ir::OpKind::State; }

// The largest f32 product result, in fused bodies too: the epilogue workspace a cuBLAS record may
// write.
uint64_t largest_product_result(const ir::Graph& g) {
  uint64_t largest = 0;
  for (const ir::Op& op : g.ops()) {
    if (op.kind == ir::OpKind::Matmul)
      largest = std::max<uint64_t>(largest, static_cast<uint64_t>(g.value(op.results[0]).type.numel()) * 4);
    if (op.region) largest = std::max(largest, largest_product_result(op.region.graph()));
  }
  return largest;
}

}  // namespace

uint64_t planned_device_bytes(const passes::TrainingProgram& program, passes::MatmulPolicy matmul) {
  const bool library = matmul != passes::MatmulPolicy::Generated;
  uint64_t bytes = library ? kCublasWorkspace : 0;
  std::set<std::string> resident_names;
  for (const ir::Graph* g : {&program.step, &program.optimizer}) {
    const runtime::PlanLayout layout(*g, codegen::arena_layout(*g));
    bytes += static_cast<uint64_t>(layout.arena().bytes);
    for (ir::ValueId v : layout.owned()) {
      const ir::Value& value = g->value(v);
      if (resident(g->producer(v).kind) && !resident_names.insert(value.name).second) continue;
      bytes += static_cast<uint64_t>(value.type.bytes());
    }
    if (library) bytes += largest_product_result(*g);
  }
  return bytes;
}

MicroBatch choose_micro_batch(const frontend::ModelDefinition& model, const frontend::Config& config, uint64_t available,
                              std::ostream& log) {
  const frontend::TrainConfig& t = config.train;
  const int64_t global = t.batch_size * t.gradient_accumulation_steps;
  const uint64_t reserve = std::min<uint64_t>(available / 20, uint64_t{256} << 20);
  const uint64_t usable = available - reserve;
  for (int64_t b = global; b >= 1; --b) {
    if (global % b != 0) continue;
    frontend::Config c = config;
    c.train.batch_size = b;
    c.train.gradient_accumulation_steps = global / b;
    const passes::TrainingProgram p =
        passes::compile_training(frontend::build_model(model, c), c.compile, c.train);
    const uint64_t need = planned_device_bytes(p, c.compile.matmul);
    const bool fits = need <= usable;
    log << fmt::format("batch-size auto: micro-batch {} x {} needs {:.2f} MiB of {:.2f} MiB usable{}\n", b, global / b,
                       mib(need), mib(usable), fits ? ": chosen" : "");
    if (fits) return {b, global / b, need};
  }
  // (cuBLAS's workspace is a floor no smaller model lowers: said first when it is most of the need.)
  const bool library = config.compile.matmul != passes::MatmulPolicy::Generated;
  throw std::runtime_error(fmt::format(
      "batch-size auto: not even a micro-batch of 1 fits the {:.2f} MiB usable: {}{}a shorter [train] seq_len, or a "
      "smaller model",
      mib(usable),
      library ? fmt::format("cuBLAS's workspace alone takes {:.0f} MiB, which --matmul generated (products by "
                            "generated kernels) leaves out; or ",
                            mib(kCublasWorkspace))
              : "",
      config.compile.recompute != passes::RecomputePolicy::Full ? "use --recompute full, " : ""));
}

}  // namespace bertc::train
