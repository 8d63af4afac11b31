// A compiled program's graphs, and the kernel listing.
#include "codegen/program.h"

#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "codegen/render.h"
#include "ir/parser.h"
#include "ir/printer.h"

namespace bertc::codegen {
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
