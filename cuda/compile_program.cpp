// A training program's kernels compiled by NVRTC (see compile_program.h).
#include "cuda/compile_program.h"

#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "codegen/render.h"
#include "ir/printer.h"

namespace bertc::cuda {

using codegen::GraphKernels;
using codegen::KernelSpec;

namespace {

// The kernels of both graphs, each distinct source once.
std::vector<KernelSource> distinct_sources(const GraphKernels& step, const GraphKernels& optimizer) {
  std::vector<KernelSource> out;
  std::set<std::string> seen;
  for (const GraphKernels* g : {&step, &optimizer})
    for (const KernelSpec& k : g->kernels)
      if (!k.source.empty() && seen.insert(k.name).second) out.push_back({k.name, codegen::device_source(k)});
  return out;
}

}  // namespace

codegen::CompiledProgram compile_program(const passes::TrainingProgram& program, const passes::CompileOptions& options,
                                const std::string& model, const std::string& config_text,
                                const CompileSettings& settings) {
  const int arch = options.arch.sm();
  if (arch == 0)
    throw std::runtime_error(fmt::format("a compiled program holds its kernels built for one GPU arch, and --arch {} "
                                         "(the host emulation's kernels, rendered when training starts) has none to "
                                         "build: pass --arch sm_61 ... sm_90 or a GPU name (a program for sm_61 also "
                                         "trains with --device host)",
                                         options.arch.text()));
  codegen::CompiledProgram p;
  p.model = model;
  p.options = options;
  p.config_text = config_text;
  p.step_ir = ir::print(program.step);
  p.optimizer_ir = ir::print(program.optimizer);
  p.step = codegen::render_graph(program.step, codegen::render_target(options));
  p.optimizer = codegen::render_graph(program.optimizer, codegen::render_target(options));
  const NvrtcCompiler compiler =
      settings.images == ImageKind::Ptx ? NvrtcCompiler::ptx_for_arch(arch) : NvrtcCompiler::for_arch(arch);
  p.nvrtc_version = compiler.version();
  p.nvrtc_library = compiler.library();
  std::vector<KernelSource> sources = distinct_sources(p.step, p.optimizer);
  std::set<std::string> seen;  // (runtime kernels of several sizes may share a source)
  for (const KernelSource& k : sources) seen.insert(k.name);
  for (const KernelSpec& k : settings.runtime_kernels)
    if (seen.insert(k.name).second) sources.push_back({k.name, codegen::device_source(k)});
  if (settings.on_start) settings.on_start(sources.size(), compiler);
  for (GpuImage& g : compile_all(compiler, sources, settings.cache, &p.stats, settings.threads)) p.images[g.name] = std::move(g);
  return p;
}

}  // namespace bertc::cuda
