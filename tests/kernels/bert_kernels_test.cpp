// Every kernel of a bert-tiny training step (forward, backward and optimizer; fp32, fp16 and bf16;
// recompute none, selective and full) as rendered for sm_61, sm_70, sm_75 and sm_80, under host
// emulation against the reference executor, in both thread orders: every launch of the step,
// matrix products and fused attention in their arch's strategy included.
#include <gtest/gtest.h>

#include <set>

#include <fmt/format.h>

#include "frontend/bert.h"
#include "bert_batch.h"
#include "harness.h"
#include "passes/fusion.h"
#include "passes/pipeline.h"
#include "passes/targets.h"
#include "run_config/config.h"
#include "run_folder/initialize.h"

namespace bertc::testing {
namespace {

using ir::HostTensor;

void expect_all_kernels_match(const std::string& precision, const std::string& recompute, int sm,
                              const std::set<std::string>& expected_strategies) {
  run_config::Config c = run_config::load_config(BERTC_SOURCE_DIR "/examples/bert-tiny.toml");
  c.compile.arch = passes::Arch::parse("none");
  c.compile.precision = ir::enum_named<passes::Precision>(precision);
  c.compile.recompute = ir::enum_named<passes::RecomputePolicy>(recompute);
  c.compile = passes::resolve_options(c.compile, passes::Arch::none());
  const passes::TrainingProgram p =
      passes::compile_training(frontend::build_bert_pretraining(c.model_settings()), c.compile, c.train);
  ir::Environment<float> env = batch_environment(c, p);
  if (precision == "fp16") env["loss_scale"].real[0] = 1024;  // 65536 overflows f16 in bert-tiny's gradients
  const std::string what = precision + ", recompute " + recompute + ", sm_" + std::to_string(sm);
  KernelHarness step(p.step, BERTC_TEST_CACHE, {sm}), optimizer(p.optimizer, BERTC_TEST_CACHE, {sm});
  // The step's kernels, then the optimizer's on the accumulated gradients the step leaves.
  ir::Environment<float> after_step = env;
  reference::Executor<float>(p.step).run(after_step);
  size_t checked = 0;
  for (auto order : {codegen::ThreadOrder::Forward, codegen::ThreadOrder::Reverse}) {
    for (const KernelCheck& k : step.check_all(env, order)) {
      EXPECT_TRUE(k.ok) << what << ": step " << k.family << " kernel " << k.kernel << " (" << k.label << "): " << k.problem;
      ++checked;
    }
    for (const KernelCheck& k : optimizer.check_all(after_step, order)) {
      EXPECT_TRUE(k.ok) << what << ": optimizer " << k.family << " kernel " << k.kernel << ": " << k.problem;
      ++checked;
    }
  }
  // Everything that launches is a kernel here, matrix products and attention included.
  EXPECT_EQ(step.kernels().kernels.size(), passes::count_launches(p.step)) << what;
  std::set<std::string> strategies;
  for (const codegen::KernelSpec& k : step.kernels().kernels)
    if (!k.strategy.empty()) strategies.insert(k.strategy);
  EXPECT_EQ(strategies, expected_strategies) << what;
  EXPECT_EQ(optimizer.kernels().kernels.size(), 2u) << what;
  std::printf("%s: %zu step kernels, %zu optimizer kernels; %zu checks\n", what.c_str(),
              step.kernels().kernels.size(), optimizer.kernels().kernels.size(), checked);
}

// Each strategy once at least: simt (sm_61, and sm_80 with cp.async), hmma884 (sm_70), hmma16816
// without cp.async (sm_75) and with it (sm_80); bf16 on sm_61 is simt with 16-bit storage.
TEST(BertTinyKernels, Fp32Sm61) { expect_all_kernels_match("fp32", "none", 61, {"simt"}); }
TEST(BertTinyKernels, Fp32FullRecomputeSm80) { expect_all_kernels_match("fp32", "full", 80, {"simt"}); }
TEST(BertTinyKernels, Fp16Sm70) { expect_all_kernels_match("fp16", "none", 70, {"hmma884"}); }
TEST(BertTinyKernels, Fp16FullRecomputeSm75) { expect_all_kernels_match("fp16", "full", 75, {"hmma16816"}); }
TEST(BertTinyKernels, Bf16Sm80) { expect_all_kernels_match("bf16", "none", 80, {"hmma16816"}); }
TEST(BertTinyKernels, Bf16SelectiveRecomputeSm61) { expect_all_kernels_match("bf16", "selective", 61, {"simt"}); }

}  // namespace
}  // namespace bertc::testing
