// The runtime's Host device: a bert-tiny training step and optimizer step run as compiled — every
// value at its memory-plan offset in one arena (buffers reused as the plan says), launches in
// order with the arguments of their records, cuBLAS records through the host — equal the
// reference executor's loss, gradients and updated parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "bert_batch.h"
#include "codegen/render.h"
#include "frontend/bert.h"
#include "ir/value_names.h"
#include "passes/targets.h"
#include "run_config/config.h"
#include "train/graph_runner.h"
#include "runtime/host_device.h"
#include "runtime/host_runner.h"
#include "runtime/plan_executor.h"
#include "reference/executor.h"

namespace bertc::testing {
namespace {

// bert-tiny's config and training program at `precision`, compiled for no particular GPU (tf32:
// for sm_80, the oldest arch that has it; it changes nothing in the program, only the kernels).
// `rows`: 2 rows of up to 3 examples each ([train] packing = "pack").
std::pair<run_config::Config, passes::TrainingProgram> bert_tiny(const std::string& precision,
                                                              ir::OpKind optimizer = ir::OpKind::Adamw,
                                                              bool rows = false) {
  run_config::Config c = run_config::load_config(BERTC_SOURCE_DIR "/examples/bert-tiny.toml");
  c.train.optimizer.kind = optimizer;
  if (rows) c.train.packing = run_config::Packing::Pack, c.train.batch_size = 2;  // (6 examples: time in CI)
  c.compile.arch = passes::Arch::parse(precision == "tf32" ? "sm_80" : "none");
  c.compile.precision = ir::enum_named<passes::Precision>(precision);
  c.compile = passes::resolve_options(c.compile, passes::Arch::none());
  passes::TrainingProgram p =
      passes::compile_training(frontend::build_bert_pretraining(c.model_settings()), c.compile, c.train);
  return {std::move(c), std::move(p)};
}

// Largest difference over a tensor as a fraction of its largest reference magnitude.
double relative_error(const HostTensor<float>& got, const HostTensor<float>& want) {
  double largest = 0, worst = 0;
  for (size_t i = 0; i < want.real.size(); ++i) largest = std::max(largest, std::abs(double(want.real[i])));
  for (size_t i = 0; i < want.real.size(); ++i) {
    const double d = std::abs(double(got.real[i]) - want.real[i]);
    worst = std::max(worst, std::isnan(d) ? INFINITY : d);
  }
  return largest == 0 ? worst : worst / largest;
}

double largest(const HostTensor<float>& t) {
  double m = 0;
  for (float x : t.real) m = std::max(m, std::abs(double(x)));
  return m;
}

// The key projection's bias has a gradient of exactly zero (softmax ignores a constant added to a
// row of scores), so both sides hold only rounding noise there, which Adam then normalizes into
// steps of arbitrary sign: those tensors are checked to stay tiny, not compared.
bool noise_only(const std::string& name) { return name.find("attention.self.key.bias") != std::string::npos; }

// `tolerance`: the largest error allowed in any tensor, relative to its largest value.
// `chain`: the optimizer step starts from the runner's own gradients; else from the reference's
// (where Adam's first step, which normalizes each gradient element to about +-1, would turn
// a 16-bit rounding difference of a near-zero gradient into a full step of the other sign).
// `worst`, if given, gets the largest relative error of the step's outputs and gradients.
void expect_step_matches(const std::string& precision, int sm, const std::string& matmul, double tolerance, bool chain,
                         double* worst_out = nullptr, ir::OpKind optimizer_kind = ir::OpKind::Adamw, bool rows = false) {
  const auto [c, p] = bert_tiny(precision, optimizer_kind, rows);
  ir::Environment<float> want = rows ? rows_environment(c, p) : batch_environment(c, p);
  if (rows) {  // (the fused attention of rows: its kernels skip the tiles between examples)
    size_t blocks = 0;
    for (const ir::Op& op : p.step.ops())
      blocks += op.info().traits.family == ir::KernelFamily::Attention && op.attr<bool>("blocks");
    EXPECT_EQ(blocks, 4u) << "forward and backward of 2 layers";
  }
  if (precision == "fp16") want["loss_scale"].real[0] = 1024;
  ir::Environment<float> got = want;
  const codegen::RenderTarget target{sm, ir::enum_named<passes::MatmulPolicy>(matmul), {}, precision == "tf32"};
  runtime::HostRunner step(p.step, codegen::render_graph(p.step, target), BERTC_TEST_CACHE);
  runtime::HostRunner optimizer(p.optimizer, codegen::render_graph(p.optimizer, target), BERTC_TEST_CACHE);
  EXPECT_GT(step.layout().arena().buffers, 50u);  // the arena is really shared out
  const auto want_out = reference::Executor<float>(p.step).run(want).outputs;
  const auto got_out = step.run(got);
  ASSERT_EQ(got_out.size(), want_out.size());
  double worst = 0;
  for (size_t i = 0; i < got_out.size(); ++i) {
    worst = std::max(worst, relative_error(got_out[i], want_out[i]));
    EXPECT_LE(relative_error(got_out[i], want_out[i]), tolerance) << "step output " << i;
  }
  // (fp16's accumulated gradients are loss-scaled, and so is their noise)
  const double noise = 1e-6 * (precision == "fp16" ? want.at("loss_scale").real.at(0) : 1.0);
  for (const auto& [name, w] : want) {
    if (!w.is_real()) continue;
    if (noise_only(name)) {
      EXPECT_LE(largest(got.at(name)), noise) << precision << " sm_" << sm << ": " << name << " should vanish";
      continue;
    }
    worst = std::max(worst, relative_error(got.at(name), w));
    EXPECT_LE(relative_error(got.at(name), w), tolerance) << "after the step: " << name;
  }
  if (!chain) got = want;
  const auto want_opt = reference::Executor<float>(p.optimizer).run(want).outputs;
  const auto got_opt = optimizer.run(got);
  ASSERT_EQ(got_opt.size(), want_opt.size());
  for (size_t i = 0; i < got_opt.size(); ++i)
    EXPECT_LE(relative_error(got_opt[i], want_opt[i]), tolerance) << "optimizer output " << i;
  size_t compared = 0;
  for (const auto& [name, w] : want) {
    if (!w.is_real() || noise_only(name)) continue;
    ASSERT_TRUE(got.count(name)) << name;
    EXPECT_LE(relative_error(got.at(name), w), tolerance) << precision << " sm_" << sm << " " << matmul << ": " << name;
    ++compared;
  }
  EXPECT_GT(compared, 40u);
  if (worst_out) *worst_out = worst;
}

// fp32: ~130 launches in a row, each summing in its own order (the reference sums rows and
// products in double or BLAS order): errors of 1e-6..1e-5 of a tensor's scale pile up through
// the backward; 1e-3 still catches a wrong offset or a launch out of order (errors of order 1).
TEST(HostRunner, Fp32StepOnSm61KernelsMatchesTheReference) { expect_step_matches("fp32", 61, "generated", 1e-3, true); }

// LAMB's three optimizer kernels (its per-tensor norms summed across blocks, the trust ratio in
// the update) against the reference running the same lowered graph op by op; the tolerance and
// its reasons as for AdamW above (the trust ratio is a ratio of two such sums: no new error).
TEST(HostRunner, LambStepMatchesTheReference) {
  expect_step_matches("fp32", 61, "generated", 1e-3, true, nullptr, ir::OpKind::Lamb);
}

// Lion's update kernel (the sign of the momentum's interpolation) against the reference on the
// same gradients (`chain` false: a gradient element near zero whose rounding differs between the
// kernels and the reference would flip its sign and move its param by 2 lr, a difference the
// update itself makes, not a fault; from the same gradients both sides agree to float rounding).
TEST(HostRunner, LionStepMatchesTheReference) {
  expect_step_matches("fp32", 61, "generated", 1e-3, false, nullptr, ir::OpKind::Lion);
}

// bf16 with every product through cuBLAS records and workspaces: bf16 activations carry 2^-9 of
// rounding per op, and a rounding flip in an early activation moves a gradient by a few bf16
// ulps; 5e-2 of a tensor's scale allows that and still catches misplaced data.
TEST(HostRunner, Bf16StepWithCublasRecordsMatchesTheReference) {
  expect_step_matches("bf16", 80, "library", 5e-2, false);
}

// tf32 (generated m16n8k8 kernels, then cuBLAS records) against the fp32 reference. Each product
// multiplies inputs rounded to 10 mantissa bits (within 2^-11 of themselves), so it is off by up to
// 2^-10 (1e-3) of the sum of its terms' magnitudes; a gradient passes through up to 6 products in
// a row (2 layers forward, then back), and 1.3e-3 of a tensor's scale is what was seen here: 1e-2
// allows that and still catches misplaced data (errors of order 1). And the products must really
// round: fp32 kernels stay within 1e-5 (the fp32 test above), TF32 rounding alone moves a gradient
// by more than 1e-4, so a tf32 program that silently ran fp32 products fails the lower bound.
TEST(HostRunner, Tf32StepMatchesTheFp32Reference) {
  for (const char* matmul : {"generated", "library"}) {
    double worst = 0;
    expect_step_matches("tf32", 80, matmul, 1e-2, false, &worst);
    EXPECT_GT(worst, 1e-4) << matmul << ": no sign of TF32 rounding";
  }
}

// Rows of up to 3 examples each ([train] packing = "pack": the examples kept apart by the
// block-diagonal attention bias, positions restarting at each example, each example's [CLS]
// gathered for the pooler) on each strategy's kernels: simt (sm_61, fp32), m8n8k4 (sm_70, fp16),
// m16n8k16 (sm_80, bf16) and m16n8k8 (sm_80, tf32). Tolerances as above, and for fp16 as bf16's
// (its 2^-11 rounding is finer). That rows train as one example a row is
// tests/unit/row_equivalence_test's: together, the kernels train rows as BERT trains examples.
TEST(HostRunner, RowsOfSeveralExamplesFp32Simt) {
  expect_step_matches("fp32", 61, "generated", 1e-3, true, nullptr, ir::OpKind::Adamw, true);
}
TEST(HostRunner, RowsOfSeveralExamplesFp16M8n8k4) {
  expect_step_matches("fp16", 70, "generated", 5e-2, false, nullptr, ir::OpKind::Adamw, true);
}
TEST(HostRunner, RowsOfSeveralExamplesBf16M16n8k16) {
  expect_step_matches("bf16", 80, "generated", 5e-2, false, nullptr, ir::OpKind::Adamw, true);
}
TEST(HostRunner, RowsOfSeveralExamplesTf32M16n8k8) {
  expect_step_matches("tf32", 80, "generated", 1e-2, false, nullptr, ir::OpKind::Adamw, true);
}

bool same_bits(const HostTensor<float>& a, const HostTensor<float>& b) {
  return a.type == b.type && a.real == b.real && a.integer == b.integer;
}

// Replaying the step recorded once as a device graph equals launching every kernel at every run,
// bit for bit, over runs whose batch, dropout seed and params differ: a recording that kept a
// run's data instead of its buffers, or replayed nothing, would give the first run's results (or
// stale ones) again.
TEST(HostRunner, GraphReplayEqualsEagerLaunchBitForBit) {
  const auto [c, p] = bert_tiny("fp32");
  const codegen::RenderTarget target{61, passes::MatmulPolicy::Generated, {}};
  using runtime::Launching;
  runtime::HostRunner step_graph(p.step, codegen::render_graph(p.step, target), BERTC_TEST_CACHE, Launching::Graph);
  runtime::HostRunner opt_graph(p.optimizer, codegen::render_graph(p.optimizer, target), BERTC_TEST_CACHE, Launching::Graph);
  runtime::HostRunner step_eager(p.step, codegen::render_graph(p.step, target), BERTC_TEST_CACHE, Launching::Eager);
  runtime::HostRunner opt_eager(p.optimizer, codegen::render_graph(p.optimizer, target), BERTC_TEST_CACHE, Launching::Eager);
  ir::Environment<float> graph_env = batch_environment(c, p);
  ir::Environment<float> eager_env = graph_env;
  std::vector<float> losses;
  for (int run = 0; run < 3; ++run) {
    for (auto* env : {&graph_env, &eager_env}) {
      (*env)["dropout_seed"].integer[0] = 1000 + run;
      for (int64_t& id : (*env)["input_ids"].integer)
        if (id != 0) id = 1 + (id + 5 * run) % (c.model.vocab_size - 1);
    }
    const auto from_graph = step_graph.run(graph_env);
    const auto from_eager = step_eager.run(eager_env);
    ASSERT_EQ(from_graph.size(), from_eager.size());
    for (size_t i = 0; i < from_graph.size(); ++i) EXPECT_TRUE(same_bits(from_graph[i], from_eager[i])) << "run " << run;
    losses.push_back(from_graph.at(0).real.at(0));
    const auto opt_from_graph = opt_graph.run(graph_env);
    const auto opt_from_eager = opt_eager.run(eager_env);
    for (size_t i = 0; i < opt_from_graph.size(); ++i)
      EXPECT_TRUE(same_bits(opt_from_graph[i], opt_from_eager[i])) << "optimizer, run " << run;
    for (const auto& [name, value] : eager_env) EXPECT_TRUE(same_bits(graph_env.at(name), value)) << name << ", run " << run;
  }
  // The runs really differ (else equal results would prove nothing about replaying new data).
  EXPECT_NE(losses[0], losses[1]);
  EXPECT_NE(losses[1], losses[2]);
}

// Training is reproducible bit for bit whatever order a GPU runs blocks in: the step and the
// optimizer step, with blocks in grid order and in shuffled orders, give the same
// loss, gradients, gradient norm and parameters. (Before cross-block sums were made deterministic,
// the loss, layer-norm weight gradients, embedding gradients and gradient norm differed in the last
// bits from one order to the next.) fp32 on sm_61's kernels (three shuffles) and bf16 on sm_80's
// (one: its emulated tensor-core kernels are slow), where 16-bit stores round any difference into
// view or away.
void expect_same_bits_in_any_block_order(const std::string& precision, int sm, const std::vector<std::uint64_t>& seeds,
                                         ir::OpKind optimizer_kind = ir::OpKind::Adamw) {
  const auto [c, p] = bert_tiny(precision, optimizer_kind);
  const codegen::RenderTarget target{sm, passes::MatmulPolicy::Generated, {}};
  runtime::HostRunner step(p.step, codegen::render_graph(p.step, target), BERTC_TEST_CACHE);
  runtime::HostRunner optimizer(p.optimizer, codegen::render_graph(p.optimizer, target), BERTC_TEST_CACHE);
  std::vector<ir::Environment<float>> ends;
  std::vector<std::vector<HostTensor<float>>> outputs;
  for (std::uint64_t seed : seeds) {
    step.set_block_order_seed(seed);
    optimizer.set_block_order_seed(seed);
    ir::Environment<float> env = batch_environment(c, p);
    auto out = step.run(env);
    for (auto& o : optimizer.run(env)) out.push_back(std::move(o));
    outputs.push_back(std::move(out));
    ends.push_back(std::move(env));
  }
  for (size_t run = 1; run < ends.size(); ++run) {
    ASSERT_EQ(outputs[run].size(), outputs[0].size());
    for (size_t i = 0; i < outputs[0].size(); ++i)
      EXPECT_TRUE(same_bits(outputs[run][i], outputs[0][i])) << precision << ": output " << i << ", order " << run;
    for (const auto& [name, value] : ends[0])
      EXPECT_TRUE(same_bits(ends[run].at(name), value)) << precision << ": " << name << ", order " << run;
  }
  EXPECT_GT(outputs[0].size(), 1u);
}

TEST(HostRunner, Fp32TrainingGivesTheSameBitsInAnyBlockOrder) { expect_same_bits_in_any_block_order("fp32", 61, {0, 1, 2, 3}); }
TEST(HostRunner, Bf16TrainingGivesTheSameBitsInAnyBlockOrder) { expect_same_bits_in_any_block_order("bf16", 80, {0, 5}); }
// LAMB's moments are written over the old ones by the kernel that also reads them for the update
// direction: with those in segments of their own (other blocks), the result depended on the block
// order (seen: the loss of step 2 moved by 1e-6 between orders 0, 1 and 2).
TEST(HostRunner, LambTrainingGivesTheSameBitsInAnyBlockOrder) {
  expect_same_bits_in_any_block_order("fp32", 61, {0, 1, 2}, ir::OpKind::Lamb);
}

// A training step and its optimizer step replayed as one device graph (run_together, what the
// trainer does without accumulation) equal the two run one after the other, bit for bit, over
// steps whose params move: the optimizer reads the gradients the step left on the device.
TEST(HostRunner, StepAndOptimizerAsOneGraphEqualTheTwoRunInTurn) {
  const auto [c, p] = bert_tiny("fp32");
  const codegen::RenderTarget target{61, passes::MatmulPolicy::Generated, {}};
  struct Side {
    std::shared_ptr<runtime::Device> device;
    std::shared_ptr<runtime::ResidentState> state;
    std::unique_ptr<train::GraphRunner> step, optimizer;
    ir::Environment<float> env;
  };
  auto make = [&](const ir::Environment<float>& env) {
    Side side{std::make_shared<runtime::HostDevice>(BERTC_TEST_CACHE), nullptr, nullptr, nullptr, env};
    side.state = std::make_shared<runtime::ResidentState>(*side.device);
    side.step = train::plan_runner(p.step, {}, target, side.device, side.state);
    side.optimizer = train::plan_runner(p.optimizer, {"grad_norm"}, target, side.device, side.state);
    return side;
  };
  const ir::Environment<float> start = batch_environment(c, p);
  Side together = make(start), in_turn = make(start);
  std::vector<float> norms;
  for (int step = 0; step < 3; ++step) {
    together.env["dropout_seed"].integer[0] = in_turn.env["dropout_seed"].integer[0] = 500 + step;
    const auto [loss, optimized] = train::run_together(*together.step, *together.optimizer, together.env);
    const auto loss_in_turn = in_turn.step->run(in_turn.env);
    const auto optimized_in_turn = in_turn.optimizer->run(in_turn.env);
    EXPECT_TRUE(same_bits(loss.outputs.at(0), loss_in_turn.outputs.at(0))) << "step " << step;
    EXPECT_TRUE(same_bits(optimized.fetched.at("grad_norm"), optimized_in_turn.fetched.at("grad_norm"))) << "step " << step;
    norms.push_back(optimized.fetched.at("grad_norm").real.at(0));
  }
  together.optimizer->download_state(together.env);
  in_turn.optimizer->download_state(in_turn.env);
  for (const auto& [name, value] : in_turn.env) EXPECT_TRUE(same_bits(together.env.at(name), value)) << name;
  EXPECT_NE(norms[0], norms[1]);  // the params moved: the steps differ
}

// The optimizer's prologue (where the data-parallel sums go: MPI on the Host device, NCCL on a
// GPU) runs on the device before the optimizer's launches in every run — the eager first, the
// recording second, the replays after — also inside the one graph of run_together. Here it
// doubles every gradient accumulator, which must equal doubling them on the host between the
// graphs (exact in floating point: the same bits).
TEST(HostRunner, AnOptimizerPrologueRunsBeforeItsLaunchesEagerRecordedAndReplayed) {
  const auto [c, p] = bert_tiny("fp32");
  const codegen::RenderTarget target{61, passes::MatmulPolicy::Generated, {}};
  std::vector<std::pair<std::string, ir::TensorType>> accumulators;
  for (ir::ValueId v : p.step.values_of(ir::OpKind::Param)) {
    const ir::Value& param = p.step.value(v);
    accumulators.emplace_back(ir::names::grad_accumulator_of(param.name), param.type);
  }
  std::vector<std::string> names;
  for (const auto& a : accumulators) names.push_back(a.first);
  auto host = std::make_shared<runtime::HostDevice>(BERTC_TEST_CACHE);
  auto state = std::make_shared<runtime::ResidentState>(*host);
  auto step = train::plan_runner(p.step, {}, target, host, state);
  auto optimizer = train::plan_runner(p.optimizer, {"grad_norm"}, target, host, state);
  int prologues = 0;
  optimizer->plan()->set_prologue([&] {
    host->issue([&] {
      ++prologues;
      for (const auto& [name, type] : accumulators) {
        auto* data = static_cast<float*>(state->buffer(name, type));
        for (int64_t i = 0; i < type.numel(); ++i) data[i] *= 2;
      }
    });
  });
  auto staged_device = std::make_shared<runtime::HostDevice>(BERTC_TEST_CACHE);
  auto staged_state = std::make_shared<runtime::ResidentState>(*staged_device);
  auto staged_step = train::plan_runner(p.step, {}, target, staged_device, staged_state);
  auto staged_optimizer = train::plan_runner(p.optimizer, {"grad_norm"}, target, staged_device, staged_state);
  ir::Environment<float> env = batch_environment(c, p), staged = env;
  for (int run = 0; run < 3; ++run) {
    env["dropout_seed"].integer[0] = staged["dropout_seed"].integer[0] = 700 + run;
    const auto [loss, optimized] = train::run_together(*step, *optimizer, env);
    staged_step->run(staged);
    staged_optimizer->download_state(names, staged);
    for (const std::string& name : names)
      for (float& x : staged.at(name).real) x *= 2;
    staged_optimizer->upload_state(names, staged);
    const auto staged_optimized = staged_optimizer->run(staged);
    EXPECT_TRUE(same_bits(optimized.fetched.at("grad_norm"), staged_optimized.fetched.at("grad_norm"))) << "run " << run;
  }
  EXPECT_EQ(prologues, 3);
  optimizer->download_state(env);
  staged_optimizer->download_state(staged);
  for (const auto& [name, value] : staged) EXPECT_TRUE(same_bits(env.at(name), value)) << name;
  EXPECT_THROW(optimizer->plan()->set_prologue([] {}), std::logic_error);  // after the first run: too late
}

// A recorded graph cannot hold host data: uploads and downloads while recording are refused, as
// a CUDA stream capture refuses them.
TEST(HostDevice, RefusesCopiesToAndFromTheHostWhileRecording) {
  runtime::HostDevice device(BERTC_TEST_CACHE);
  void* buffer = device.allocate(16, "the test buffer");
  float host[4] = {1, 2, 3, 4};
  EXPECT_THROW(device.record([&] { device.upload(buffer, host, sizeof host); }), std::logic_error);
  EXPECT_THROW(device.record([&] { device.download(host, buffer, sizeof host); }), std::logic_error);
  // After a refused recording the device works as before; a recorded fill runs only when replayed.
  device.upload(buffer, host, sizeof host);
  const auto graph = device.record([&] { device.fill(buffer, 0, sizeof host); });
  float back[4] = {};
  device.download(back, buffer, sizeof back);
  EXPECT_EQ(back[3], 4.0f);
  device.replay(*graph);
  device.download(back, buffer, sizeof back);
  EXPECT_EQ(back[3], 0.0f);
}

// cuBLAS sets itself up on its first call, which a CUDA stream capture cannot hold: the Host
// device refuses a first product inside a recording as CUDA would, and accepts one after an
// eager product (which a Graph plan's first, eager, run issues: train_host.test trains through
// cuBLAS records on the Host device for several steps).
TEST(HostDevice, RefusesAFirstCublasProductInsideARecording) {
  runtime::HostDevice device(BERTC_TEST_CACHE);
  float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, c[4] = {};
  codegen::LibraryProductArgs g{};
  g.m = g.n = g.k = 2;
  g.ld_first = g.ld_second = g.ldc = 2;
  g.batch = 1;
  g.operand_type = g.result_type = ir::DType::F32;
  try {
    device.record([&] { device.library_product(g, a, b, c); });
    FAIL() << "a first cuBLAS product was recorded";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("run the plan once eagerly first"), std::string::npos) << e.what();
  }
  device.library_product(g, a, b, c);
  EXPECT_EQ(c[1], 2.0f);  // column-major: c = a * identity
  std::fill(c, c + 4, 0.0f);
  const auto graph = device.record([&] { device.library_product(g, b, a, c); });
  EXPECT_EQ(c[1], 0.0f);  // recorded, not run
  device.replay(*graph);
  EXPECT_EQ(c[1], 2.0f);
}

// A GPU reports a fault at the next wait, not at the launch. A device whose wait fails after its
// third launch stands for one: the run's error says how to find the launch, and with
// BERTC_SYNC_LAUNCHES=1 names it (kernel, op scope, arguments with their values' names).
class FaultyDevice : public runtime::HostDevice {
 public:
  using HostDevice::HostDevice;
  void launch(const codegen::KernelSpec& k, void** args) override {
    HostDevice::launch(k, args);
    if (++launches_ == 3) faulted_ = k.name;
  }
  void synchronize() override {
    if (!faulted_.empty()) throw std::runtime_error("CUDA: cuStreamSynchronize failed: an illegal memory access");
  }
  std::string faulted_;

 private:
  int launches_ = 0;
};

TEST(HostDevice, SyncLaunchesNamesTheLaunchAtFault) {
  const auto [c, p] = bert_tiny("fp32");
  const codegen::RenderTarget target{61, passes::MatmulPolicy::Generated, {}};
  const codegen::GraphKernels kernels = codegen::render_graph(p.step, target);
  for (bool sync : {false, true}) {
    if (sync) ::setenv("BERTC_SYNC_LAUNCHES", "1", 1);
    else ::unsetenv("BERTC_SYNC_LAUNCHES");
    FaultyDevice device(BERTC_TEST_CACHE);
    runtime::PlanExecutor executor(p.step, kernels, device);
    ir::Environment<float> env = batch_environment(c, p);
    try {
      executor.run(env);
      FAIL() << "the fault went unreported";
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("illegal memory access"), std::string::npos) << what;
      if (!sync) {
        EXPECT_NE(what.find("run again with BERTC_SYNC_LAUNCHES=1"), std::string::npos) << what;
        continue;
      }
      size_t third = 0;  // the third launch that has a kernel
      for (int seen = 0; seen < 3; ++third)
        if (!kernels.kernels[third].source.empty()) ++seen;
      const codegen::KernelSpec& k = kernels.kernels[third - 1];
      EXPECT_EQ(k.name, device.faulted_);
      EXPECT_NE(what.find(fmt::format("launch {} (", third - 1)), std::string::npos) << what;
      EXPECT_NE(what.find(k.name), std::string::npos) << what;
      EXPECT_NE(what.find(k.label), std::string::npos) << what;
      EXPECT_NE(what.find("arguments:"), std::string::npos) << what;
      for (const codegen::KernelParam& param : k.params) {
        if (param.kind == codegen::ParamKind::Buffer) {
          EXPECT_NE(what.find("'" + p.step.value(param.value).name + "'"), std::string::npos) << what;
        }
      }
    }
  }
  ::unsetenv("BERTC_SYNC_LAUNCHES");
}

}  // namespace
}  // namespace bertc::testing
