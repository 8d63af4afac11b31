// The PTX emulator (ptx/) running the PTX NVRTC emits for every kernel of a bert-tiny training
// step and optimizer step on sm_61 in fp32 (SIMT products), each launch value by value against
// the reference executor (tests/kernels/harness.h), under its memory checks. This executes what
// a P40 would run, not the host's compile of the kernels' source.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <set>

#include <fmt/format.h>

#include "bert_batch.h"
#include "codegen/matrix_strategy.h"
#include "codegen/nvrtc_compiler.h"
#include "codegen/render.h"
#include "frontend/bert.h"
#include "harness.h"
#include "passes/pipeline.h"
#include "passes/targets.h"
#include "ptx/executor.h"

namespace bertc::testing {
namespace {

// One PTX module of every distinct kernel of `graphs`, as NVRTC makes it for `sm`.
ptx::Module module_of(const std::vector<const codegen::GraphKernels*>& graphs, int sm) {
  const codegen::NvrtcCompiler nvrtc = codegen::NvrtcCompiler::ptx_for_arch(sm);
  std::string source = "#include \"bx.h\"\n\n";
  std::set<std::string> names;
  for (const codegen::GraphKernels* g : graphs)
    for (const codegen::KernelSpec& k : g->kernels)
      if (!k.source.empty() && names.insert(k.name).second) source += k.source + "\n";
  const codegen::GpuImage image = nvrtc.compile({"all", source}, std::filesystem::path(BERTC_TEST_CACHE) / "failed");
  return ptx::parse_module(image.image, fmt::format("bert-tiny sm_{}", sm));
}

// A launcher that runs the kernel's PTX, the launch's buffers its only global memory.
Launcher ptx_launcher(ptx::Emulator& emulator, ptx::LaunchCounts& counts) {
  return [&](const codegen::KernelSpec& k, const std::vector<void*>& args, const std::vector<LaunchMemory>& memory,
             codegen::ThreadOrder order) {
    emulator.clear_globals();
    for (const LaunchMemory& m : memory) emulator.add_global(m.base, m.bytes);
    std::vector<uint64_t> values;
    for (void* a : args) values.push_back(reinterpret_cast<uint64_t>(a));
    const auto dim = [](const codegen::Dim3& d) {
      return ptx::Dim3{static_cast<uint32_t>(d.x), static_cast<uint32_t>(d.y), static_cast<uint32_t>(d.z)};
    };
    // (the reverse order runs threads and blocks shuffled: a kernel that is right gives the same)
    const ptx::LaunchConfig config{dim(k.grid), dim(k.block), 0, order == codegen::ThreadOrder::Reverse ? 7u : 0u};
    const ptx::LaunchCounts launch = emulator.launch(k.name, emulator.pack_params(k.name, values), config);
    counts.thread_instructions += launch.thread_instructions;
    for (const auto& [op, n] : launch.by_op) counts.by_op[op] += n;
  };
}

// Every launch of a bert-tiny step and optimizer step in `precision`, from NVRTC's PTX for `sm`.
void expect_step_matches(int sm, passes::Precision precision) {
  frontend::Config c = frontend::load_config(BERTC_SOURCE_DIR "/examples/bert-tiny.toml");
  c.train.batch_size = 2;  // (small: every instruction of every thread is interpreted)
  c.train.seq_len = 32;
  c.train.max_predictions_per_seq = 4;
  c.compile.arch = passes::Arch::parse(fmt::format("sm_{}", sm));
  c.compile.precision = precision;
  c.compile = passes::resolve_options(c.compile, passes::Arch::none());
  const passes::TrainingProgram p = passes::compile_training(frontend::build_bert_pretraining(c), c.compile, c.train);
  c.compile.matmul = passes::MatmulPolicy::Generated;  // (every product a kernel of ours, none cuBLAS)
  const codegen::RenderTarget target = codegen::render_target(c.compile);
  codegen::GraphKernels step_kernels = codegen::render_graph(p.step, target);
  codegen::GraphKernels optimizer_kernels = codegen::render_graph(p.optimizer, target);
  ptx::Emulator emulator(module_of({&step_kernels, &optimizer_kernels}, sm));
  ptx::LaunchCounts counts;
  KernelHarness step(p.step, std::move(step_kernels), ptx_launcher(emulator, counts));
  KernelHarness optimizer(p.optimizer, std::move(optimizer_kernels), ptx_launcher(emulator, counts));
  ir::Environment<float> env = batch_environment(c, p);
  ir::Environment<float> after_step = env;
  reference::Executor<float>(p.step).run(after_step);
  size_t checked = 0;
  // (threads and blocks in a shuffled order: a kernel that misses a barrier or races gives other
  // values, where index order might hide it; one order, as every instruction is interpreted)
  for (auto order : {codegen::ThreadOrder::Reverse}) {
    for (const KernelCheck& k : step.check_all(env, order)) {
      EXPECT_TRUE(k.ok) << "step " << k.family << " kernel " << k.kernel << " (" << k.label << "): " << k.problem;
      ++checked;
    }
    for (const KernelCheck& k : optimizer.check_all(after_step, order)) {
      EXPECT_TRUE(k.ok) << "optimizer " << k.family << " kernel " << k.kernel << ": " << k.problem;
      ++checked;
    }
  }
  EXPECT_GT(checked, 100u);  // (every launch of both graphs: 111 at these sizes in fp32)
  // (the products ran on tensor cores where the precision asks for them: a test that never
  // reached mma would prove nothing about it)
  const uint64_t mma = counts.by_op[ptx::Op::Mma];
  if (precision == passes::Precision::Fp32) EXPECT_EQ(mma, 0u);
  else EXPECT_GT(mma, 0u);
  std::cout << fmt::format("{} launches checked from NVRTC's sm_{} PTX ({}); {} thread-instructions executed, {} of them mma\n",
                           checked, sm, ir::enum_name(precision), counts.thread_instructions, mma);
}

TEST(PtxEmulation, EveryKernelOfABertTinyStepOnSm61MatchesTheReference) { expect_step_matches(61, passes::Precision::Fp32); }

// sm_80 in bf16: the matrix products and attention on tensor cores (mma.m16n8k16, ldmatrix,
// cp.async), as an A100 would run them.
TEST(PtxEmulation, EveryKernelOfABertTinyStepOnSm80InBf16MatchesTheReference) {
  expect_step_matches(80, passes::Precision::Bf16);
}

// sm_70 (V100) in fp16: the products on mma.m8n8k4, four quad-pair computations per warp.
TEST(PtxEmulation, EveryKernelOfABertTinyStepOnSm70InFp16MatchesTheReference) {
  expect_step_matches(70, passes::Precision::Fp16);
}

// sm_75 (T4) in fp16: each m16n8k16 product as two mma.m16n8k8, without cp.async.
TEST(PtxEmulation, EveryKernelOfABertTinyStepOnSm75InFp16MatchesTheReference) {
  expect_step_matches(75, passes::Precision::Fp16);
}

// sm_80 in tf32: fp32 tensors, products on mma.m16n8k8 with operands rounded by cvt.rna.tf32.f32.
TEST(PtxEmulation, EveryKernelOfABertTinyStepOnSm80InTf32MatchesTheReference) {
  expect_step_matches(80, passes::Precision::Tf32);
}

// sm_90 (H100, H200) in bf16: NVRTC 13's PTX, the same instructions as sm_80's.
TEST(PtxEmulation, EveryKernelOfABertTinyStepOnSm90InBf16MatchesTheReference) {
  expect_step_matches(90, passes::Precision::Bf16);
}

}  // namespace
}  // namespace bertc::testing
