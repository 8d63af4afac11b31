// The PTX reader (ptx/) on the PTX NVRTC emits for every kernel of bert-tiny's training step and
// optimizer step, per arch and precision (fp32 and fp32-fp16storage on sm_61, fp16 on sm_70, bf16
// and tf32 on sm_80, bf16 on sm_90; AdamW and LAMB): every kernel read, every instruction decoded
// against the table written from the PTX ISA, nothing skipped. What the emulator will execute.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "cuda/nvrtc_compiler.h"
#include "codegen/render.h"
#include "frontend/bert.h"
#include "run_config/config.h"
#include "passes/pipeline.h"
#include "passes/targets.h"
#include "ptx/module.h"

namespace bertc::codegen {
namespace {

struct Case {
  const char* arch;
  const char* precision;
  ir::OpKind optimizer;
  std::vector<ptx::Op> present;  // instructions its strategy must have made
};

TEST(PtxReaderOnKernels, ReadsEveryKernelOfATrainingStepForEachArch) {
  using ptx::Op;
  const std::vector<Case> cases = {
      {"sm_61", "fp32", ir::OpKind::Adamw, {Op::Fma, Op::Shfl, Op::Bar}},
      {"sm_61", "fp32", ir::OpKind::Lamb, {Op::Fma, Op::Shfl, Op::Bar}},
      {"sm_61", "fp32-fp16storage", ir::OpKind::Adamw, {Op::Fma, Op::Cvt}},  // (fp16 storage: cvt each way)
      {"sm_70", "fp16", ir::OpKind::Adamw, {Op::Mma}},
      {"sm_80", "bf16", ir::OpKind::Adamw, {Op::Mma, Op::Ldmatrix, Op::Cp}},
      {"sm_80", "tf32", ir::OpKind::Adamw, {Op::Mma, Op::Cp}},
      {"sm_90", "bf16", ir::OpKind::Adamw, {Op::Mma, Op::Ldmatrix, Op::Cp}},
  };
  for (const Case& e : cases) {
    run_config::Config c = run_config::load_config(std::string(BERTC_SOURCE_DIR) + "/examples/bert-tiny.toml");
    c.compile.arch = passes::Arch::parse(e.arch);
    c.compile.precision = ir::enum_named<passes::Precision>(e.precision);
    c.train.optimizer.kind = e.optimizer;
    c.compile = passes::resolve_options(c.compile, passes::Arch::none());
    const passes::TrainingProgram p = passes::compile_training(frontend::build_bert_pretraining(c.model_settings()), c.compile, c.train);
    const cuda::NvrtcCompiler nvrtc = cuda::NvrtcCompiler::ptx_for_arch(std::stoi(std::string(e.arch).substr(3)));
    const RenderTarget target{nvrtc.arch(), passes::MatmulPolicy::Generated, {},
                              c.compile.precision == passes::Precision::Tf32};
    // One translation unit of every distinct kernel: one NVRTC run, one module.
    std::string source = "#include \"bx.h\"\n\n";
    std::set<std::string> names;
    for (const ir::Graph* g : {&p.step, &p.optimizer})
      for (const KernelSpec& k : render_graph(*g, target).kernels)
        if (!k.source.empty() && names.insert(k.name).second) source += k.source + "\n";
    const std::string label =
        fmt::format("{} {} {}", e.arch, e.precision, passes::optimizer_name(passes::OptimizerOp{e.optimizer}));
    const GpuImage image =
        nvrtc.compile({"all", source}, std::filesystem::path(BERTC_TEST_CACHE) / "failed");
    ASSERT_TRUE(image.ptx) << label;
    ptx::Module m;
    try {
      m = ptx::parse_module(image.image, label);
    } catch (const ptx::Error& error) {
      FAIL() << error.what();
    }
    EXPECT_EQ(m.sm, nvrtc.arch()) << label;
    EXPECT_EQ(m.entries.size(), names.size()) << label;
    std::map<Op, size_t> census;
    size_t instructions = 0;
    for (const ptx::Entry& entry : m.entries) {
      EXPECT_TRUE(names.count(entry.name)) << label << ": " << entry.name;
      EXPECT_FALSE(entry.body.empty()) << label << ": " << entry.name;
      EXPECT_GT(entry.maxntid[0], 0) << label << ": " << entry.name << " has no .maxntid (launch bounds)";
      for (const ptx::Instruction& in : entry.body) ++census[in.opcode.op], ++instructions;
    }
    for (Op op : e.present) EXPECT_GT(census[op], 0u) << label << ": no " << static_cast<int>(op);
    if (std::string(e.arch) == "sm_61") {
      EXPECT_EQ(census[Op::Mma], 0u) << label;
    }
    std::cout << fmt::format("{}: {} kernels, {} instructions of {} kinds read\n", label, m.entries.size(),
                             instructions, census.size());
  }
}

}  // namespace
}  // namespace bertc::codegen
