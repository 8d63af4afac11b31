// The PTX emulator (ptx/) running the PTX NVRTC emits for every kernel of a bert-tiny training
// step and optimizer step (ptx_step.h), for each GPU generation's form of the products: sm_61
// fp32 (SIMT), sm_70 fp16 (mma.m8n8k4), sm_75 fp16 (m16n8k8), sm_80 tf32 (m16n8k8) and bf16
// (m16n8k16, ldmatrix, cp.async), sm_90 bf16; each launch value by value against the reference
// executor, under the emulator's checks. This executes what the GPU would run, not the host's
// compile of the kernels' source.
#include <gtest/gtest.h>

#include <iostream>

#include <fmt/format.h>

#include "ptx_step.h"

namespace bertc::testing {
namespace {

// Every launch of a bert-tiny step and optimizer step in `precision`, from NVRTC's PTX for `sm`.
void expect_step_matches(int sm, passes::Precision precision) {
  const PtxStepRun run = run_step_on_ptx({sm, precision}, BERTC_TEST_CACHE);
  for (const KernelCheck& k : run.step)
    EXPECT_TRUE(k.ok) << "step " << k.family << " kernel " << k.kernel << " (" << k.label << "): " << k.problem;
  for (const KernelCheck& k : run.optimizer)
    EXPECT_TRUE(k.ok) << "optimizer " << k.family << " kernel " << k.kernel << ": " << k.problem;
  const size_t checked = run.step.size() + run.optimizer.size();
  EXPECT_GT(checked, 100u);  // (every launch of both graphs: 111 at these sizes in fp32)
  // (the products ran on tensor cores where the precision asks for them: a test that never
  // reached mma would prove nothing about it)
  const auto mma = run.counts.by_op.find(ptx::Op::Mma);
  const uint64_t mmas = mma == run.counts.by_op.end() ? 0 : mma->second;
  if (precision == passes::Precision::Fp32) EXPECT_EQ(mmas, 0u);
  else EXPECT_GT(mmas, 0u);
  std::cout << fmt::format("{} launches checked from NVRTC's sm_{} PTX ({}); {} thread-instructions executed, {} of them mma\n",
                           checked, sm, ir::enum_name(precision), run.counts.thread_instructions, mmas);
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
