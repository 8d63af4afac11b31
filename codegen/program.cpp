// Compiling a training program's kernels, and the kernel listing.
#include "codegen/program.h"

#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "codegen/render.h"
#include "ir/parser.h"
#include "ir/printer.h"

namespace bertc::codegen {
namespace {

// The kernels of both graphs, each distinct source once.
std::vector<KernelSource> distinct_sources(const GraphKernels& step, const GraphKernels& optimizer) {
  std::vector<KernelSource> out;
  std::set<std::string> seen;
  for (const GraphKernels* g : {&step, &optimizer})
    for (const KernelSpec& k : g->kernels)
      if (!k.source.empty() && seen.insert(k.name).second) out.push_back({k.name, device_source(k)});
  return out;
}

}  // namespace

CompiledProgram compile_program(const passes::TrainingProgram& program, const passes::CompileOptions& options,
                                const std::string& model, const std::string& config_text,
                                const CompileSettings& settings) {
  const int arch = options.arch.sm();
  if (arch == 0)
    throw std::runtime_error(fmt::format("a compiled program holds its kernels built for one GPU arch, and --arch {} "
                                         "(the host emulation's kernels, rendered when training starts) has none to "
                                         "build: pass --arch sm_61 ... sm_90 or a GPU name (a program for sm_61 also "
                                         "trains with --device host)",
                                         options.arch.text()));
  CompiledProgram p;
  p.model = model;
  p.options = options;
  p.config_text = config_text;
  p.step_ir = ir::print(program.step);
  p.optimizer_ir = ir::print(program.optimizer);
  p.step = render_graph(program.step, render_target(options));
  p.optimizer = render_graph(program.optimizer, render_target(options));
  const NvrtcCompiler compiler = NvrtcCompiler::for_arch(arch);
  p.nvrtc_version = compiler.version();
  p.nvrtc_library = compiler.library();
  std::vector<KernelSource> sources = distinct_sources(p.step, p.optimizer);
  std::set<std::string> seen;  // (runtime kernels of several sizes may share a source)
  for (const KernelSource& k : sources) seen.insert(k.name);
  for (const KernelSpec& k : settings.runtime_kernels)
    if (seen.insert(k.name).second) sources.push_back({k.name, device_source(k)});
  if (settings.on_start) settings.on_start(sources.size(), compiler);
  for (GpuImage& g : compile_all(compiler, sources, settings.cache, &p.stats, settings.threads)) p.images[g.name] = std::move(g);
  return p;
}

passes::TrainingProgram graphs_of(const CompiledProgram& p) {
  passes::TrainingProgram program;
  program.step = ir::parse(p.step_ir);
  program.optimizer = ir::parse(p.optimizer_ir);
  program.recompute.policy = std::string(ir::enum_name(p.options.recompute)) + " (as compiled)";
  return program;
}

std::string cuda_listing(const GraphKernels& step, const GraphKernels& optimizer) {
  std::string out = "// Kernels of the training program, in launch order; each distinct source once.\n"
                    "// They include only bertc's prelude (\"bx.h\").\n";
  std::set<std::string> printed;
  auto graph = [&](const char* title, const GraphKernels& k) {
    out += fmt::format("\n// ===== {} graph: {} kernels =====\n", title, k.kernels.size());
    for (const KernelSpec& s : k.kernels) {
      const std::string family(ir::enum_name(s.family));
      const std::string family_strategy = s.strategy.empty() ? family : family + ", " + s.strategy;
      out += fmt::format("\n// op {}: {} ({}), grid {}x{}x{}, block {}x{}x{}{}\n", s.op_index, family_strategy, s.label, s.grid.x,
                         s.grid.y, s.grid.z, s.block.x, s.block.y, s.block.z,
                         s.zero_before.empty() ? "" : ", outputs zeroed first");
      if (s.library)
        out += fmt::format("// cuBLAS first: {}\n// (cublasGemmStridedBatchedEx; {})\n", library_text(*s.library),
                           s.source.empty() ? "no kernel after it" : "then this epilogue kernel on its workspace");
      if (s.source.empty()) continue;
      if (printed.insert(s.name).second) out += s.source;
      else out += fmt::format("// (the same kernel as above: {})\n", s.name);
    }
  };
  graph("step", step);
  graph("optimizer", optimizer);
  return out;
}

}  // namespace bertc::codegen
