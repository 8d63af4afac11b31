// The PTX emulator's whole-step run (ptx_step.h).
#include "ptx_step.h"

#include <chrono>
#include <map>
#include <set>

#include <fmt/format.h>

#include "bert_batch.h"
#include "codegen/matrix_strategy.h"
#include "cuda/nvrtc_compiler.h"
#include "codegen/render.h"
#include "frontend/bert.h"
#include "ir/stats.h"
#include "passes/cost_model.h"
#include "passes/pipeline.h"
#include "passes/targets.h"
#include "run_config/config.h"
#include "cuda/ptx_device.h"

namespace bertc::testing {
namespace {

struct Compiled {
  run_config::Config config;
  passes::TrainingProgram program;
  codegen::RenderTarget target;
};

Compiled compile(const PtxStep& s) {
  run_config::Config c = run_config::load_config(BERTC_SOURCE_DIR "/examples/bert-tiny.toml");
  c.train.batch_size = s.batch;
  c.train.seq_len = s.seq;
  c.train.max_predictions_per_seq = s.predictions;
  if (s.rows) c.train.packing = run_config::Packing::Pack;
  if (s.hidden) c.model.hidden_size = s.hidden;
  if (s.heads) c.model.num_attention_heads = s.heads;
  if (s.intermediate) c.model.intermediate_size = s.intermediate;
  if (s.vocab) c.model.vocab_size = s.vocab;
  c.train.optimizer = {s.optimizer};
  c.compile.arch = passes::Arch::parse(fmt::format("sm_{}", s.sm));
  c.compile.precision = s.precision;
  c.compile = passes::resolve_options(c.compile, passes::Arch::none());
  c.compile.matmul = passes::MatmulPolicy::Generated;  // (every product a kernel of ours, none cuBLAS)
  passes::TrainingProgram p = passes::compile_training(frontend::build_bert_pretraining(c.model_settings()), c.compile, c.train);
  const codegen::RenderTarget target = codegen::render_target(c.compile);
  return {std::move(c), std::move(p), target};
}

// One PTX module of every distinct kernel of `graphs`, as NVRTC makes it for `sm` (once per
// source in a process: the planted bugs' runs change the same module many times).
ptx::Module module_of(const std::vector<const codegen::GraphKernels*>& graphs, int sm,
                      const std::filesystem::path& cache, const std::function<std::string(const std::string&)>& mutate) {
  std::string source = "#include \"bx.h\"\n\n";
  std::set<std::string> names;
  for (const codegen::GraphKernels* g : graphs)
    for (const codegen::KernelSpec& k : g->kernels)
      if (!k.source.empty() && names.insert(k.name).second) source += k.source + "\n";
  static std::map<std::pair<int, std::string>, std::string> made;
  std::string& ptx = made[{sm, source}];
  if (ptx.empty()) ptx = cuda::NvrtcCompiler::ptx_for_arch(sm).compile({"all", source}, cache / "failed").image;
  return ptx::parse_module(mutate ? mutate(ptx) : ptx, fmt::format("bert-tiny sm_{}", sm));
}

// The launch limits of sm_`sm`'s GPU, from the GPU table.
ptx::ArchLimits limits_of(int sm) {
  const std::optional<passes::GpuSpec> gpu = passes::gpu_of_sm(sm);
  if (!gpu) throw std::invalid_argument(fmt::format("no GPU of sm_{} in the GPU table", sm));
  return {fmt::format("{} (sm_{})", gpu->title, sm), static_cast<uint64_t>(gpu->shared_kb_per_block * 1024), 64 << 10, 0,
          static_cast<uint32_t>(gpu->multiprocessors), static_cast<uint32_t>(gpu->max_warps_per_sm)};
}

// The roofline of `graph`'s op on each GPU of sm_`sm` in the table, by name.
std::map<std::string, double> rooflines(const ir::Graph& graph, size_t op, int sm, passes::Precision precision) {
  std::map<std::string, double> out;
  for (const passes::GpuSpec& gpu : passes::gpu_specs())
    if (gpu.arch == sm) out[std::string(gpu.name)] = passes::launch_cost(graph, graph.ops().at(op), gpu, precision).seconds;
  return out;
}

// A launcher that runs the kernel's PTX, the launch's buffers its only global memory, under every
// checker (initcheck of global memory included: results and the workspace start unwritten).
Launcher ptx_launcher(ptx::Emulator& emulator, PtxStepRun& run, uint64_t shrink, const ptx::ArchLimits& limits,
                      const ir::Graph& graph, bool optimizer, const PtxStep& s) {
  return [&, shrink, optimizer](const codegen::KernelSpec& k, const std::vector<void*>& args,
                     const std::vector<LaunchMemory>& memory, codegen::ThreadOrder order) {
    emulator.clear_globals();
    // (initcheck of global memory: what the harness wrote before the launch counts as written)
    auto shadow = std::make_shared<ptx::GlobalShadow>();
    for (const LaunchMemory& m : memory) {
      const uint64_t bytes = m.bytes - std::min<uint64_t>(shrink, m.bytes);
      emulator.add_global(m.base, bytes);
      shadow->track(reinterpret_cast<uint64_t>(m.base), bytes);
      if (m.written) shadow->written(reinterpret_cast<uint64_t>(m.base), bytes);
    }
    emulator.check_global_initialization(shadow);
    std::vector<uint64_t> values;
    for (void* a : args) values.push_back(reinterpret_cast<uint64_t>(a));
    const auto dim = [](const codegen::Dim3& d) {
      return ptx::Dim3{static_cast<uint32_t>(d.x), static_cast<uint32_t>(d.y), static_cast<uint32_t>(d.z)};
    };
    // (the reverse order runs threads and blocks shuffled, four blocks side by side, their warps'
    // turns interleaved: a kernel that is right gives the same, its last blocks' sums included)
    ptx::LaunchConfig config{dim(k.grid), dim(k.block), 0, order == codegen::ThreadOrder::Reverse ? 7u : 0u, limits};
    config.resident_blocks = 4;
    if (s.timed) config.latencies = cuda::ptx_latencies(s.sm);
    // (every approximate instruction at the edge of the ISA's error bound: the reference's
    // tolerances must hold for any GPU's ex2, rsqrt, tanh and division, not only for exact ones)
    config.approx = ptx::ApproxResults::WorstCase;
    const auto start = std::chrono::steady_clock::now();
    const ptx::LaunchCounts launch = emulator.launch(k.name, emulator.pack_params(k.name, values), config);
    run.emulator_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    run.counts += launch;
    const ir::Op& op = graph.ops().at(k.op_index);
    run.launches.push_back({optimizer, k.op_index, k.family, k.strategy, ir::op_flops(graph, op),
                            k.family == ir::KernelFamily::Attention ? ir::attention_product_flops(graph, op) : 0, launch,
                            rooflines(graph, k.op_index, s.sm, s.precision)});
  };
}

}  // namespace

PtxStepRun run_step_on_ptx(const PtxStep& s, const std::filesystem::path& cache) {
  const Compiled c = compile(s);
  codegen::GraphKernels step_kernels = codegen::render_graph(c.program.step, c.target);
  codegen::GraphKernels optimizer_kernels = codegen::render_graph(c.program.optimizer, c.target);
  ptx::Emulator emulator(module_of({&step_kernels, &optimizer_kernels}, s.sm, cache, s.mutate));
  PtxStepRun run;
  const ptx::ArchLimits limits = limits_of(s.sm);
  KernelHarness step(c.program.step, std::move(step_kernels),
                     ptx_launcher(emulator, run, s.shrink_buffers, limits, c.program.step, false, s));
  KernelHarness optimizer(c.program.optimizer, std::move(optimizer_kernels),
                          ptx_launcher(emulator, run, s.shrink_buffers, limits, c.program.optimizer, true, s));
  ir::Environment<float> env = s.rows ? rows_environment(c.config, c.program) : batch_environment(c.config, c.program);
  ir::Environment<float> after_step = env;
  reference::Executor<float>(c.program.step).run(after_step);
  const auto start = std::chrono::steady_clock::now();
  run.step = step.check_all(env, s.order, s.only);
  run.optimizer = optimizer.check_all(after_step, s.order, s.only);
  run.checked_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

double run_step_on_host(const PtxStep& s, const std::filesystem::path& cache) {
  const Compiled c = compile(s);
  KernelHarness step(c.program.step, cache, c.target);
  KernelHarness optimizer(c.program.optimizer, cache, c.target);
  ir::Environment<float> env = s.rows ? rows_environment(c.config, c.program) : batch_environment(c.config, c.program);
  ir::Environment<float> after_step = env;
  reference::Executor<float>(c.program.step).run(after_step);
  const auto start = std::chrono::steady_clock::now();
  step.check_all(env, s.order);
  optimizer.check_all(after_step, s.order);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace bertc::testing
