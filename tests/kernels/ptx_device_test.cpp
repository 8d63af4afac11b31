// The PTX device (cuda/ptx_device.h): the compiled plan run from NVRTC's PTX on the PTX
// emulator, through the same plan executor as the Host and CUDA devices; its checkers fail a
// launch that a GPU would run wrong.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include <fmt/format.h>

#include "bert_batch.h"
#include "frontend/bert.h"
#include "passes/pipeline.h"
#include "passes/targets.h"
#include "codegen/render.h"
#include "run_config/config.h"
#include "runtime/host_device.h"
#include "runtime/plan_executor.h"
#include "cuda/ptx_device.h"
#include "driver/ptx_counts.h"
#include "train/graph_runner.h"

namespace bertc::testing {
namespace {

// bert-tiny's config and program at fp32, every product a kernel of ours (the PTX device runs no
// cuBLAS), batch 2 x 32 tokens (every thread's every instruction is interpreted).
std::pair<run_config::Config, passes::TrainingProgram> small_bert_tiny() {
  run_config::Config c = run_config::load_config(BERTC_SOURCE_DIR "/examples/bert-tiny.toml");
  c.train.batch_size = 2;
  c.train.seq_len = 32;
  c.train.max_predictions_per_seq = 4;
  c.compile = passes::resolve_options(c.compile, passes::Arch::none());
  c.compile.matmul = passes::MatmulPolicy::Generated;
  passes::TrainingProgram p = passes::compile_training(frontend::build_bert_pretraining(c.model_settings()), c.compile, c.train);
  return {std::move(c), std::move(p)};
}

// The step's loss and the optimizer's gradient norm on `device`.
std::pair<double, double> loss_and_norm(const run_config::Config& c, const passes::TrainingProgram& p,
                                        std::shared_ptr<runtime::Device> device) {
  const codegen::RenderTarget target{61, passes::MatmulPolicy::Generated, {}};
  auto state = std::make_shared<runtime::ResidentState>(*device);
  auto step = train::plan_runner(p.step, {}, target, device, state);
  auto optimizer = train::plan_runner(p.optimizer, {"grad_norm"}, target, device, state);
  ir::Environment<float> env = batch_environment(c, p);
  const auto [stepped, optimized] = train::run_together(*step, *optimizer, env);
  return {stepped.outputs.at(0).real.at(0), optimized.fetched.at("grad_norm").real.at(0)};  // (the loss: output 0)
}

// A training step and optimizer step of bert-tiny on the PTX device (sm_61's PTX, every checker
// on) give the Host device's loss and gradient norm: the same kernels' source under host
// emulation, which compiles without contracting a*b+c into FMAs as NVRTC does, so the figures
// differ in rounding only: 1e-5 of them (fp32 sums of a few thousand terms; a wrong kernel moves
// them by far more). Every launch was counted, with ptxas's registers where NVRTC makes cubins.
TEST(PtxDevice, RunsABertTinyStepAsTheHostDeviceDoes) {
  const auto [c, p] = small_bert_tiny();
  auto emulated = std::make_shared<cuda::PtxDevice>(BERTC_TEST_CACHE, 61);
  const auto [loss, norm] = loss_and_norm(c, p, emulated);
  const auto [host_loss, host_norm] = loss_and_norm(c, p, std::make_shared<runtime::HostDevice>(BERTC_TEST_CACHE));
  EXPECT_NEAR(loss, host_loss, 1e-5 * std::abs(host_loss));
  EXPECT_NEAR(norm, host_norm, 1e-5 * std::abs(host_norm));
  ASSERT_GT(emulated->launches().size(), 50u);
  for (const runtime::PtxLaunchRecord& l : emulated->launches()) {
    EXPECT_GT(l.counts.thread_instructions, 0u) << l.kernel;
    if (emulated->registers_known()) {
      EXPECT_GT(l.registers, 0u) << l.kernel;
    }
  }
  EXPECT_EQ(emulated->capabilities().sm, 61);
  EXPECT_FALSE(emulated->capabilities().no_library.empty());  // (plans for it use generated products)
}

// Sampled (PtxDevice::sample_blocks, bertc check --sample-blocks): each launch runs at most 3
// blocks (scatter_add's all: its blocks' work follows the data), a repeated kernel and grid none,
// and the counts scaled to the grids come close to the
// whole run's: within 10% in thread-instructions and FLOPs (the sample's last block is a tail tile,
// over-weighted: 3% more instructions measured on test-tiny; counts left unscaled would be a
// fraction of them, and repeats left out fewer still). Launch for launch the same grids.
TEST(PtxDevice, SampledLaunchesCountCloseToTheWholeRun) {
  const auto [c, p] = small_bert_tiny();
  auto whole = std::make_shared<cuda::PtxDevice>(BERTC_TEST_CACHE, 61);
  auto sampled = std::make_shared<cuda::PtxDevice>(BERTC_TEST_CACHE, 61);
  sampled->sample_blocks(3);
  loss_and_norm(c, p, whole);
  loss_and_norm(c, p, sampled);
  ASSERT_EQ(whole->launches().size(), sampled->launches().size());
  ptx::LaunchCounts all, some;
  size_t repeats = 0, cut = 0, scatters = 0;
  for (size_t i = 0; i < whole->launches().size(); ++i) {
    const runtime::PtxLaunchRecord &w = whole->launches()[i], &s = sampled->launches()[i];
    EXPECT_EQ(w.kernel, s.kernel);
    EXPECT_EQ(w.counts.blocks, s.counts.blocks) << w.kernel;
    EXPECT_EQ(w.counts.executed_blocks, w.counts.blocks) << w.kernel;
    repeats += s.repeat, cut += s.counts.executed_blocks < s.counts.blocks;
    if (s.family == "scatter_add") {  // (its blocks' work is the data's: run whole, every launch)
      EXPECT_FALSE(s.repeat);
      EXPECT_EQ(s.counts.executed_blocks, s.counts.blocks);
      EXPECT_EQ(s.counts.thread_instructions, w.counts.thread_instructions);
      ++scatters;
    } else {
      EXPECT_LE(s.counts.executed_blocks, 3u) << s.kernel;
    }
    all += w.counts, some += s.counts;
  }
  EXPECT_GT(repeats, 0u);
  EXPECT_GT(cut, 10u);
  EXPECT_GE(scatters, 2u);  // (the embeddings' gradients)
  EXPECT_NEAR(static_cast<double>(some.thread_instructions), static_cast<double>(all.thread_instructions),
              0.1 * static_cast<double>(all.thread_instructions));
  EXPECT_NEAR(some.flops, all.flops, 0.1 * all.flops);
}

// Every kernel of bert-base's training step and optimizer step (examples/bert-base.toml: hidden
// 768, 12 heads, feed-forward 3072, vocabulary 30522, 12 layers; the batch shrunk to 2 x 16 tokens)
// from NVRTC's PTX for each arch, launched under every checker: sampled (PtxDevice::sample_blocks,
// 2 blocks of a grid, its first and last: the tails), each kernel once (its repeats in the other
// layers counted, not run). A checker's finding or a launch the arch refuses throws.
struct BertBaseTarget {
  int sm;
  passes::Precision precision;
};

class EveryBertBaseKernel : public ::testing::TestWithParam<BertBaseTarget> {};

TEST_P(EveryBertBaseKernel, RunsUnderTheCheckers) {
  const BertBaseTarget t = GetParam();
  run_config::Config c = run_config::load_config(BERTC_SOURCE_DIR "/examples/bert-base.toml");
  c.train.batch_size = 2, c.train.seq_len = 16, c.train.max_predictions_per_seq = 2;
  c.compile.precision = t.precision;
  c.compile.matmul = passes::MatmulPolicy::Generated;  // (the emulator runs bertc's kernels, no cuBLAS)
  c.compile = passes::resolve_options(c.compile, passes::Arch::of_sm(t.sm));
  const passes::TrainingProgram p = passes::compile_training(frontend::build_bert_pretraining(c.model_settings()), c.compile, c.train);
  cuda::PtxDevice device(BERTC_TEST_CACHE, t.sm);
  device.sample_blocks(2);
  const codegen::RenderTarget target{t.sm, passes::MatmulPolicy::Generated, {}, t.precision == passes::Precision::Tf32};
  ir::Environment<float> env = batch_environment(c, p);
  std::set<std::string> kernels;
  for (const ir::Graph* graph : {&p.step, &p.optimizer}) {
    for (ir::ValueId v : graph->values_of(ir::OpKind::Input))  // (the gradients: zeros do as well for counting)
      if (!env.count(graph->value(v).name)) env[graph->value(v).name] = ir::HostTensor<float>::zeros(graph->value(v).type);
    codegen::GraphKernels launches = codegen::render_graph(*graph, target);
    for (const codegen::KernelSpec& k : launches.kernels) kernels.insert(k.name);
    runtime::PlanExecutor(*graph, std::move(launches), device).run(env);
  }
  std::set<std::string> run;
  size_t sampled = 0;
  for (const runtime::PtxLaunchRecord& l : device.launches()) {
    if (l.repeat) continue;
    run.insert(l.kernel);
    EXPECT_GT(l.counts.executed_blocks, 0u) << l.kernel;
    sampled += l.counts.executed_blocks < l.counts.blocks;
  }
  EXPECT_EQ(run, kernels);  // (each kernel ran at least once)
  EXPECT_GT(kernels.size(), 40u);
  EXPECT_GT(sampled, 20u);
  EXPECT_EQ(device.launches().size(), 451u + (t.precision == passes::Precision::Fp32 ? 0u : 80u))
      << "bert-base's launches (a 16-bit step also casts its gradients)";
}

INSTANTIATE_TEST_SUITE_P(PtxDevice, EveryBertBaseKernel,
                         ::testing::Values(BertBaseTarget{61, passes::Precision::Fp32},
                                           BertBaseTarget{70, passes::Precision::Fp16},
                                           BertBaseTarget{80, passes::Precision::Bf16},
                                           BertBaseTarget{90, passes::Precision::Bf16}),
                         [](const ::testing::TestParamInfo<BertBaseTarget>& info) {
                           return fmt::format("sm_{}_{}", info.param.sm, ir::enum_name(info.param.precision));
                         });

// A kernel that writes one element past its buffer: the launch fails, naming the kernel and the
// emulator (a GPU would have written the neighbour's memory silently); the same kernel bounded
// right writes every element.
TEST(PtxDevice, AnOutOfBoundsWriteFailsTheLaunch) {
  auto kernel = [](const std::string& name, const char* bound) {
    codegen::KernelSpec k;
    k.name = name;
    k.label = "a planted bug";
    k.source = "BX_KERNEL void " + name + "(float* x, long long n) {\n  long long i = blockIdx.x * blockDim.x + "
               "threadIdx.x;\n  if (i " + bound + " n) x[i] = 1.0f;\n}\n";
    k.params = {{codegen::ParamKind::Buffer, "x", "float*"}, {codegen::ParamKind::Buffer, "n", "long long"}};
    k.grid = {1, 1, 1};
    k.block = {64, 1, 1};
    return k;
  };
  const codegen::KernelSpec wrong = kernel("k_planted_off_by_one", "<="), right = kernel("k_planted_bounded", "<");
  cuda::PtxDevice device(BERTC_TEST_CACHE, 61);
  device.load({&wrong, &right});
  void* x = device.allocate(32 * sizeof(float), "the test buffer");
  long long n = 32;
  void* args[] = {&x, &n};
  try {
    device.launch(wrong, args);
    FAIL() << "the write past the buffer was not caught";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("kernel k_planted_off_by_one (a planted bug) on the PTX emulator for sm_61"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("outside every allocation the launch was given"), std::string::npos)
        << e.what();  // (memcheck's finding, not another failure of the launch)
    // The kernel source's line of the store, from NVRTC's .loc (-lineinfo), as it reads.
    EXPECT_NE(std::string(e.what()).find(": if (i <= n) x[i] = 1.0f;"), std::string::npos) << e.what();
  }
  device.launch(right, args);
  float back[32] = {};
  device.download(back, x, sizeof back);
  for (float v : back) EXPECT_EQ(v, 1.0f);
}

// initcheck of global memory: a kernel reading a buffer nothing wrote (a GPU's fresh allocation
// holds whatever was there) fails the launch naming the byte and the source line; uploaded, fill
// or copied from written bytes, it runs; and a kernel's own stores count as writes for the next.
TEST(PtxDevice, AReadOfGlobalMemoryNothingWroteFailsTheLaunch) {
  codegen::KernelSpec k;
  k.name = "k_planted_uninitialised_read";
  k.label = "a planted bug";
  k.source = "BX_KERNEL void k_planted_uninitialised_read(const float* y, float* x) {\n  x[threadIdx.x] = "
             "y[threadIdx.x] + 1.0f;\n}\n";
  k.params = {{codegen::ParamKind::Buffer, "y", "const float*"}, {codegen::ParamKind::Buffer, "x", "float*"}};
  k.grid = {1, 1, 1};
  k.block = {32, 1, 1};
  cuda::PtxDevice device(BERTC_TEST_CACHE, 61);
  device.load({&k});
  void* y = device.allocate(32 * sizeof(float), "the input");
  void* x = device.allocate(32 * sizeof(float), "the output");
  void* z = device.allocate(32 * sizeof(float), "a copy");
  void* args[] = {&y, &x};
  try {
    device.launch(k, args);
    FAIL() << "the read of memory nothing wrote was not caught";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("initcheck: reads global memory at"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("of an allocation of 128 at"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(": x[threadIdx.x] = y[threadIdx.x] + 1.0f;"), std::string::npos) << e.what();
  }
  device.fill(y, 0, 32 * sizeof(float));
  device.launch(k, args);  // (filled: read)
  void* from_output[] = {&x, &z};
  device.launch(k, from_output);  // (the first launch's stores: read)
  device.copy(y, z, 32 * sizeof(float));
  device.launch(k, args);  // (copied from written bytes: read)
  float back[32] = {};
  device.download(back, x, sizeof back);
  for (float v : back) EXPECT_EQ(v, 3.0f);  // (0 + 1, + 1, + 1)
}

// memcheck by buffer: where the launch says which buffers its arguments name (a plan's launches),
// the kernel writing one element past its output fails the launch naming the buffer, though the
// allocation (an arena holding two values) holds the byte, which a launch without them lets through.
// A planted bug: kernel `name` of one block of `threads`, whose one argument is float* x, doing `body`.
codegen::KernelSpec planted_on_x(const std::string& name, const std::string& body, int64_t threads) {
  codegen::KernelSpec k;
  k.name = name;
  k.label = "a planted bug";
  k.source = "BX_KERNEL void " + name + "(float* x) {\n  " + body + "\n}\n";
  k.params = {{codegen::ParamKind::Buffer, "x", "float*"}};
  k.grid = {1, 1, 1};
  k.block = {static_cast<int>(threads), 1, 1};
  return k;
}

TEST(PtxDevice, AWritePastItsBufferInsideTheAllocationFailsTheLaunch) {
  const codegen::KernelSpec k = planted_on_x("k_planted_past_its_value", "x[threadIdx.x] = 1.0f;", 33);
  cuda::PtxDevice device(BERTC_TEST_CACHE, 61);
  device.load({&k});
  void* arena = device.allocate(64 * sizeof(float), "an arena of two values");
  void* args[] = {&arena};
  runtime::LaunchFootprint footprint;
  footprint.buffers = {{arena, 32 * sizeof(float), "'x' (f32[32])"}};
  try {
    device.launch_within(k, args, footprint);
    FAIL() << "the write past the value was not caught";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("outside every buffer the kernel's arguments name: 0 bytes past the end of "
                                         "'x' (f32[32]) (128 bytes)"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("thread (32,0,0)"), std::string::npos) << e.what();  // (the 33rd alone)
  }
  device.launch(k, args);  // (by allocation alone: inside it)
  footprint.buffers = {{arena, 33 * sizeof(float), "'x' (f32[33])"}};
  device.launch_within(k, args, footprint);  // (the same kernel within its buffer)
}

// initcheck by value: a launch's fresh values (the first writes of their step, in arena bytes an
// earlier value held) are unwritten until it writes them, so a kernel reading its output before
// writing it fails, though an earlier value's stores wrote those bytes.
TEST(PtxDevice, AReadOfAFreshValueBeforeItsStoreFailsTheLaunch) {
  const codegen::KernelSpec k =
      planted_on_x("k_planted_reads_its_output", "x[threadIdx.x] = x[threadIdx.x] + 1.0f;", 32);
  cuda::PtxDevice device(BERTC_TEST_CACHE, 61);
  device.load({&k});
  void* arena = device.allocate(32 * sizeof(float), "an arena");
  device.fill(arena, 0, 32 * sizeof(float));  // (an earlier value's bytes)
  void* args[] = {&arena};
  runtime::LaunchFootprint footprint;
  footprint.buffers = {{arena, 32 * sizeof(float), "'x' (f32[32])"}};
  device.launch_within(k, args, footprint);  // (not fresh: its bytes' old contents are its own)
  footprint.fresh = footprint.buffers;
  try {
    device.launch_within(k, args, footprint);
    FAIL() << "the read of a dead value's bytes was not caught";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("initcheck: reads global memory at"), std::string::npos) << e.what();
  }
}

// A bug planted in bert-tiny's training step, in the first of its pointwise kernels (one vector
// store to out0) whose output `fits` in the arena: the kernel source with `store` (that store)
// changed to `planted`, and renamed; the output's name, none if no kernel fits.
struct PlantedStep {
  codegen::GraphKernels launches;
  std::optional<std::string> victim;
};
PlantedStep plant_in_step(const passes::TrainingProgram& p, const std::string& planted,
                          const std::function<bool(const codegen::GraphKernels&, size_t, ir::ValueId)>& fits) {
  PlantedStep out{codegen::render_graph(p.step, {61, passes::MatmulPolicy::Generated, {}}), std::nullopt};
  const std::string store = "bx_stv<4>(out0, i0, vout0);";
  for (size_t i = 0; i < out.launches.kernels.size(); ++i) {
    codegen::KernelSpec& k = out.launches.kernels[i];
    if (k.family != ir::KernelFamily::Pointwise || k.source.find(store) == std::string::npos) continue;
    const auto o = std::find_if(k.params.begin(), k.params.end(), [](const codegen::KernelParam& q) { return q.name == "out0"; });
    if (out.launches.arena.offset_of.at(o->value) < 0 || !fits(out.launches, i, o->value)) continue;
    out.victim = p.step.value(o->value).name;
    const std::string name = "k_planted_" + k.name.substr(2);
    for (size_t at; (at = k.source.find(k.name)) != std::string::npos;) k.source.replace(at, k.name.size(), name);
    k.source.replace(k.source.find(store), store.size(), planted);
    k.name = name;
    break;
  }
  return out;
}

// The error running `planted`'s step on the PTX device, or "" when it ran.
std::string error_of_step(const run_config::Config& c, const passes::TrainingProgram& p, PlantedStep planted) {
  cuda::PtxDevice device(BERTC_TEST_CACHE, 61);
  ir::Environment<float> env = batch_environment(c, p);
  try {
    runtime::PlanExecutor(p.step, std::move(planted.launches), device).run(env);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

// The plan's launches are checked value by value, though the memory plan puts every per-step
// value in one allocation: a pointwise kernel of bert-tiny's step storing each vector 4 elements
// on (the last past its output, into arena bytes after it) fails naming that value.
TEST(PtxDevice, APlanWritingPastAValueInItsArenaFails) {
  const auto [c, p] = small_bert_tiny();
  // (arena bytes after the output that are none of the kernel's own buffers: an overflow into one
  // of those is inside the launch's buffers, which this check lets through by design)
  PlantedStep planted = plant_in_step(p, "bx_stv<4>(out0, i0 + 4, vout0);",
                                      [&](const codegen::GraphKernels& l, size_t i, ir::ValueId v) {
                                        const int64_t end = l.arena.offset_of.at(v) + p.step.value(v).type.bytes();
                                        for (const codegen::KernelParam& q : l.kernels[i].params)
                                          if (q.kind == codegen::ParamKind::Buffer && q.value != v &&
                                              l.arena.offset_of.at(q.value) >= 0 &&
                                              l.arena.offset_of.at(q.value) < end + 16 &&
                                              l.arena.offset_of.at(q.value) + p.step.value(q.value).type.bytes() > end)
                                            return false;
                                        return end + 16 <= l.arena.bytes;
                                      });
  ASSERT_TRUE(planted.victim.has_value()) << "no pointwise kernel to plant the bug in";
  const std::string victim = *planted.victim, error = error_of_step(c, p, std::move(planted));
  EXPECT_NE(error.find("k_planted_"), std::string::npos) << error;
  EXPECT_NE(error.find("outside every buffer the kernel's arguments name: 0 bytes past the end of '" + victim + "'"),
            std::string::npos)
      << error;
}

// And a pointwise kernel reading its output before it stores it, in arena bytes an earlier launch
// of the step wrote for another value (so initcheck by allocation finds them written): the value
// is fresh at that launch, its old bytes dead, and the read fails.
TEST(PtxDevice, APlanReadingAValueBeforeWritingItFails) {
  const auto [c, p] = small_bert_tiny();
  auto reused = [&](const codegen::GraphKernels& l, size_t i, ir::ValueId v) {
    const int64_t at = l.arena.offset_of.at(v), end = at + p.step.value(v).type.bytes();
    auto overlaps = [&](ir::ValueId w) {
      const int64_t b = l.arena.offset_of.at(w);
      return w != v && b >= 0 && b < end && at < b + p.step.value(w).type.bytes();
    };
    bool earlier = false;  // (an earlier launch wrote another value there)
    for (size_t j = 0; j < i; ++j)
      for (const codegen::KernelParam& q : l.kernels[j].params) earlier |= q.written && overlaps(q.value);
    for (const codegen::KernelParam& q : l.kernels[i].params)  // (not in place on one it reads)
      if (!q.written && q.kind == codegen::ParamKind::Buffer && overlaps(q.value)) return false;
    return earlier;
  };
  PlantedStep planted =
      plant_in_step(p, "vout0[0] = out0[i0] == out0[i0] ? vout0[0] : 0.0f; bx_stv<4>(out0, i0, vout0);", reused);
  ASSERT_TRUE(planted.victim.has_value()) << "no pointwise kernel to plant the bug in";
  const std::string error = error_of_step(c, p, std::move(planted));
  EXPECT_NE(error.find("k_planted_"), std::string::npos) << error;
  EXPECT_NE(error.find("initcheck: reads global memory at"), std::string::npos) << error;
}

// The rates projections take are the GPU table's in TFLOPS (an A100's dense bf16 tensor-core peak
// is 312; the cost model's matrix_peak is in FLOP/s, and passed as it was, every mma's time was
// 1e12 times too small), and an mma-bound launch projects at that rate.
TEST(PtxCounts, RatesAreTheDatasheetsInTflops) {
  const passes::GpuSpec a100 = *passes::gpu_of_sm(80);
  const ptx::GpuRates bf16 = driver::rates_of(a100, passes::Precision::Bf16);
  EXPECT_NEAR(bf16.mma_tflops, a100.bf16_tensor_tflops, 1e-9);
  EXPECT_GT(bf16.mma_tflops, 100);
  EXPECT_EQ(driver::rates_of(a100, passes::Precision::Fp32).mma_tflops, 0);  // (fp32 runs no mma)
  ptx::LaunchCounts c;
  c.blocks = 10000, c.thread_instructions = 1, c.flops = c.mma_flops = 312e12 * 1e-3;  // a millisecond's worth
  const ptx::Projection p = ptx::project(c, bf16);
  EXPECT_NEAR(p.mma_seconds, 1e-3 * 312 / a100.bf16_tensor_tflops, 1e-9);
  EXPECT_EQ(p.bound, ptx::Bound::Mma);
}

// A kernel with a cuBLAS product (a compiled program's, matmul library) is refused when it loads,
// naming the fix (it failed at its launch, partway through a step, saying only that the device
// runs no cuBLAS).
TEST(PtxDevice, RefusesProductsInCublasWhenTheyLoad) {
  codegen::KernelSpec k;
  k.name = "k_library_product";
  k.library = codegen::LibraryGemm{};
  cuda::PtxDevice device(BERTC_TEST_CACHE, 80);
  try {
    device.load({&k});
    FAIL() << "a cuBLAS product was loaded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("runs 1 matrix product(s) in cuBLAS, and the PTX emulator runs bertc's own "
                                         "kernels, not cuBLAS's: compile it again with --matmul generated"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace bertc::testing
