// The cost model and the compile report against figures worked out by hand: FLOPs and bytes of
// single ops, BERT-base's FLOPs from its shapes, and what fusion and recompute promise (fewer
// launches, less planned activation memory, little extra work). No timing is asserted.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <stdexcept>

#include "frontend/bert.h"
#include "ir/builder.h"
#include "ir/printer.h"
#include "run_config/config.h"
#include "passes/cost_model.h"
#include "passes/pipeline.h"
#include "passes/report.h"
#include "passes/targets.h"

namespace bertc::passes {
namespace {

using ir::DType;

// A graph with one matmul [64,32] x [32,16] and one gather of 10 rows from a [1000,8] table.
ir::Graph small_graph() {
  ir::Builder b("small");
  auto x = b.input("x", DType::F32, {64, 32});
  auto w = b.param("w", {32, 16});
  b.output(b.matmul(x, w), "y");
  auto table = b.param("table", {1000, 8});
  auto ids = b.input("ids", DType::I32, {10});
  b.output(b.gather(table, ids), "rows");
  return std::move(b).finish();
}

const ir::Op& first(const ir::Graph& g, ir::OpKind kind) {
  for (const ir::Op& op : g.ops())
    if (op.kind == kind) return op;
  throw std::logic_error("no such op");
}

TEST(CostModel, MatmulFlopsBytesAndRoofline) {
  const ir::Graph g = small_graph();
  const ir::Op& mm = first(g, ir::OpKind::Matmul);
  const auto h200 = find_gpu("h200");
  const LaunchCost c = launch_cost(g, mm, h200, Precision::Fp32);
  EXPECT_TRUE(c.launch);
  EXPECT_EQ(c.flops, 2 * 64 * 32 * 16);                   // a multiply and an add per term
  EXPECT_EQ(c.bytes, (64 * 32 + 32 * 16 + 64 * 16) * 4);  // both operands and the result, once
  // So small a matmul is bound by neither peak: the launch cost dominates, and the rest is the
  // larger of the two roofline terms.
  const double expect = std::max(c.flops / (h200->fp32_tflops * 1e12), c.bytes / (h200->bandwidth_gbs * 1e9)) +
                        kLaunchSeconds;
  EXPECT_DOUBLE_EQ(c.seconds, expect);
  EXPECT_EQ(launch_cost(g, mm, std::nullopt, Precision::Fp32).seconds, 0.0);
}

// The boost clocks the FP32 peaks are at (datasheets: P40 1531 MHz, V100 SXM2 1530, A100 1410,
// H100 SXM 1980), from the peak, the arch's FP32 lanes a multiprocessor and the multiprocessors;
// within 5 MHz, as the table's peaks are rounded to three figures (15.7, 67: 0.3% at most).
TEST(CostModel, ClocksFollowFromTheFp32Peaks) {
  EXPECT_NEAR(find_gpu("p40")->clock_ghz(), 1.531, 0.005);
  EXPECT_NEAR(find_gpu("v100")->clock_ghz(), 1.530, 0.005);
  EXPECT_NEAR(find_gpu("a100")->clock_ghz(), 1.410, 0.005);
  EXPECT_NEAR(find_gpu("h100")->clock_ghz(), 1.980, 0.005);
}

TEST(CostModel, GatherReadsOnlyTheGatheredRows) {
  const ir::Graph g = small_graph();
  const LaunchCost c = launch_cost(g, first(g, ir::OpKind::Gather), find_gpu("p40"), Precision::Fp32);
  // 10 rows of 8 floats read, 10 int32 ids read, 10 rows written; not the 1000-row table.
  EXPECT_EQ(c.bytes, 10 * 8 * 4 + 10 * 4 + 10 * 8 * 4);
}

TEST(CostModel, SourcesLaunchNothing) {
  const ir::Graph g = small_graph();
  int sources = 0;
  for (const ir::Op& op : g.ops()) {
    if (op.kind != ir::OpKind::Param && op.kind != ir::OpKind::Input) continue;
    ++sources;
    EXPECT_FALSE(launch_cost(g, op, find_gpu("h200"), Precision::Fp32).launch);
  }
  EXPECT_EQ(sources, 4);
}

TEST(CostModel, TensorCoresRaiseTheMatmulPeak) {
  ir::Builder b("big");
  // Large enough to be compute-bound on every GPU (arithmetic intensity ~ 1365 FLOP/byte).
  auto x = b.input("x", DType::BF16, {4096, 4096});
  auto w = b.param("w", {4096, 4096}, DType::BF16);
  b.output(b.matmul(x, w), "y");
  const ir::Graph g = std::move(b).finish();
  const ir::Op& mm = first(g, ir::OpKind::Matmul);
  const auto h200 = find_gpu("h200");
  const LaunchCost c = launch_cost(g, mm, h200, Precision::Bf16);
  EXPECT_NEAR(c.seconds - kLaunchSeconds, c.flops / (h200->bf16_tensor_tflops * 1e12), 1e-12);
  // The P40 has no tensor cores and no BF16 peak: the FP32 SIMT peak applies.
  const auto p40 = find_gpu("p40");
  const LaunchCost p = launch_cost(g, mm, p40, Precision::Bf16);
  EXPECT_NEAR(p.seconds - kLaunchSeconds, p.flops / (p40->fp32_tflops * 1e12), 1e-9);
}

// BERT-base pretraining (examples/bert-base.toml: batch 32, seq 128, 20 predictions) for `recompute`.
CompileReport bert_base(const std::string& recompute, int64_t budget = 0) {
  run_config::Config config = run_config::load_config(BERTC_SOURCE_DIR "/examples/bert-base.toml");
  config.compile.arch = passes::Arch::parse("h200");
  config.compile.precision = ir::enum_named<passes::Precision>("fp32");
  config.compile.recompute = ir::enum_named<passes::RecomputePolicy>(recompute);
  config.compile.memory_budget = budget;
  config.compile = resolve_options(config.compile, passes::Arch::none());
  return compile_report(frontend::build_bert_pretraining(config.model_settings()), config.compile, config.train,
                        config.train.batch_size);
}

// Forward FLOPs of BERT-base's matrix products, from its shapes alone.
double bert_base_matmul_flops() {
  const double B = 32, S = 128, H = 768, I = 3072, L = 12, V = 30522, P = 20;
  const double tokens = B * S;
  const double per_layer = 2 * tokens * (4 * H * H + 2 * H * I)  // QKV, output, FFN up and down
                           + 2 * 2 * B * S * S * H;              // QK^T and PV over all heads
  const double heads = 2 * B * P * H * H + 2 * B * P * H * V     // MLM transform and decoder
                       + 2 * B * H * H + 2 * B * H * 2;          // pooler, NSP classifier
  return L * per_layer + heads;
}

// ZeRO stage 1's memory: AdamW keeps two fp32 moments per param element, and a shard of whole
// tensors keeps at least its fraction of them and at most that and the largest tensor's.
TEST(CompileReport, ZeroStageOneSplitsTheMoments) {
  run_config::Config config = run_config::load_config(BERTC_SOURCE_DIR "/examples/bert-base.toml");
  config.compile.arch = passes::Arch::parse("p40");
  config.compile = resolve_options(config.compile, passes::Arch::none());
  TrainingProgram program;
  const CompileReport r = compile_report(frontend::build_bert_pretraining(config.model_settings()), config.compile,
                                         config.train, config.train.batch_size, &program);
  int64_t elements = 0, largest = 0;
  for (ir::ValueId p : program.step.values_of(ir::OpKind::Param)) {
    elements += program.step.value(p).type.numel();
    largest = std::max(largest, program.step.value(p).type.numel());
  }
  const int64_t moments = 2 * 4 * elements;
  int64_t counted = 0;
  for (int64_t b : r.param_state_bytes) counted += b;
  EXPECT_EQ(counted, moments);
  EXPECT_EQ(r.device_bytes_with_zero1(1), r.device_bytes());
  for (int ranks : {2, 4, 8}) {
    const int64_t kept = moments - (r.device_bytes() - r.device_bytes_with_zero1(ranks));
    EXPECT_GE(kept, moments / ranks) << ranks;
    EXPECT_LE(kept, moments / ranks + 2 * 4 * largest) << ranks;
  }
  // The optimizer graph compile_optimizer makes from the compiled step graph is the pipeline's:
  // the same params, states and inputs and as many ops (the schedule pass reorders the step
  // graph's params, so the optimizer's slots come in another order); a shard's holds fewer.
  auto sources = [](const ir::Graph& g) {
    std::multiset<std::string> out;
    for (ir::OpKind kind : {ir::OpKind::Param, ir::OpKind::State, ir::OpKind::Input})
      for (ir::ValueId v : g.values_of(kind)) out.insert(g.value(v).name + ": " + ir::to_string(g.value(v).type));
    return out;
  };
  OptimizerOptions whole = config.train;
  const ir::Graph again = compile_optimizer(program.step, config.compile, whole);
  EXPECT_EQ(sources(again), sources(program.optimizer));
  EXPECT_EQ(again.ops().size(), program.optimizer.ops().size());
  whole.shards = 2;
  EXPECT_LT(sources(compile_optimizer(program.step, config.compile, whole)).size(), sources(program.optimizer).size());
}

TEST(CompileReport, BertBaseFlopsMatchTheShapes) {
  const CompileReport r = bert_base("none");
  const double matmuls = bert_base_matmul_flops();
  // Pointwise work (layer norms, GELU, softmax, dropout, the loss) adds about 1% to the products;
  // 3% allows it without letting a missing or doubled matmul (>= 4% each) through.
  EXPECT_GE(r.step.flops_forward, matmuls);
  EXPECT_LE(r.step.flops_forward, 1.03 * matmuls);
  // The backward of a product is two products (input and weight gradients); the embedding
  // input gradient is the only one saved, so the ratio lies just under or over 2.
  const double ratio = static_cast<double>(r.step.flops_backward) / r.step.flops_forward;
  EXPECT_GT(ratio, 1.9);
  EXPECT_LT(ratio, 2.1);
  EXPECT_EQ(r.step.flops_recompute, 0);
}

// Counts ops of `kind` in a graph and in the regions of its fused ops.
int count_ops(const ir::Graph& g, ir::OpKind kind) {
  int n = 0;
  for (const ir::Op& op : g.ops()) {
    n += op.kind == kind;
    if (op.kind == ir::OpKind::Fused) n += count_ops(op.region.graph(), kind);
  }
  return n;
}

// BERT-base's attention reads q, k, v where the QKV projection wrote them and writes the context
// (and, backward, dQKV) where the next product reads it: the only permutes BERT builds are the
// heads' (forward and their gradients'), so a compiled step holds none, nor a slice of the
// projection's heads, and the pads left are the two gradients of slices outside attention; each
// layer has one attention_qkv and one attention_qkv_grad. (Before: 3 permute
// launches and the gradient's pad-and-add per layer, 96 launches and 5.1 GB a step in fp32.)
TEST(CompileReport, BertBaseAttentionHasNoCopiesAroundIt) {
  run_config::Config config = run_config::load_config(BERTC_SOURCE_DIR "/examples/bert-base.toml");
  config.compile.arch = passes::Arch::parse("h200");
  config.compile = resolve_options(config.compile, passes::Arch::none());
  const passes::TrainingProgram p =
      passes::compile_training(frontend::build_bert_pretraining(config.model_settings()), config.compile, config.train);
  EXPECT_EQ(count_ops(p.step, ir::OpKind::AttentionQkv), 12);
  EXPECT_EQ(count_ops(p.step, ir::OpKind::AttentionQkvGrad), 12);
  EXPECT_EQ(count_ops(p.step, ir::OpKind::Attention), 0);
  EXPECT_EQ(count_ops(p.step, ir::OpKind::Permute), 0);
  EXPECT_EQ(count_ops(p.step, ir::OpKind::Pad), 2);  // the [CLS] slice's and the position table's gradients
}

TEST(CompileReport, FusionCutsLaunchesWithoutChangingWork) {
  const CompileReport r = bert_base("none");
  EXPECT_LE(r.launches_per_step, r.launches_before_fusion * 4 / 10);  // the bar: <= 40%
  const GraphFigures* before = nullptr;
  const GraphFigures* after = nullptr;
  for (const StageFigures& s : r.stages) {
    if (s.graph != "step") continue;
    if (s.pass == "recompute") before = &s.figures;
    if (s.pass == "fusion") after = &s.figures;
  }
  ASSERT_NE(before, nullptr);
  ASSERT_NE(after, nullptr);
  EXPECT_EQ(after->flops(), before->flops());  // fusion regroups ops, it adds and drops none
  EXPECT_LT(after->bytes, before->bytes);      // intermediates inside a kernel never reach memory
}

TEST(CompileReport, RecomputeTradesMemoryForLittleWork) {
  const CompileReport none = bert_base("none");
  const CompileReport selective = bert_base("selective");
  const CompileReport full = bert_base("full");
  const double base = static_cast<double>(none.step_memory.arena_bytes);
  EXPECT_LE(selective.step_memory.arena_bytes, 0.70 * base);
  EXPECT_LE(full.step_memory.arena_bytes, 0.30 * base);
  // Selective recomputes only cheap ops: a few percent of the step's FLOPs.
  EXPECT_GT(selective.step.flops_recompute, 0);
  EXPECT_LE(selective.step.flops_recompute, 0.05 * none.flops_per_step);
  // Full recomputes each layer's forward once: at most a third more work.
  EXPECT_GT(full.step.flops_recompute, selective.step.flops_recompute);
  EXPECT_LE(full.step.flops_recompute, 0.34 * none.flops_per_step);
  // Loss and gradients are the same ops: forward and backward FLOPs do not move.
  EXPECT_EQ(full.step.flops_forward, none.step.flops_forward);
  EXPECT_EQ(full.step.flops_backward, none.step.flops_backward);
}

TEST(CompileReport, AutoFitsTheBudget) {
  const CompileReport plain = bert_base("none");
  const int64_t none = plain.step_memory.arena_bytes;
  const int64_t budget = none / 2;  // between full (17%) and selective (63%): needs some full layers
  const CompileReport r = bert_base("auto", budget);
  EXPECT_LE(r.step_memory.arena_bytes, budget);
  EXPECT_NE(r.recompute.find("full on"), std::string::npos) << r.recompute;
  // Full recompute of half the layers costs half a forward, a sixth of the step, and does not fit
  // alone (7 layers do); auto's mix of full and selective layers must be cheaper.
  EXPECT_LT(r.step.flops_recompute, plain.flops_per_step / 6) << r.recompute;
  // A budget everything fits leaves the program as it is.
  EXPECT_EQ(bert_base("auto", 2 * none).recompute, "auto: none");
}

// bert-tiny ([train] packing as given) compiled and reported with its rows counted at `rows`.
CompileReport bert_tiny_rows(run_config::Packing packing, const RowFractions& rows, TrainingProgram* program = nullptr,
                             bool fused_attention = true) {
  run_config::Config config = run_config::load_config(BERTC_SOURCE_DIR "/examples/bert-tiny.toml");
  config.train.packing = packing;
  config.compile.arch = passes::Arch::parse("p40");
  config.compile.fused_attention = fused_attention;
  config.compile = resolve_options(config.compile, passes::Arch::none());
  return compile_report(frontend::build_bert_pretraining(config.model_settings()), config.compile, config.train,
                        config.train.batch_size, program, rows);
}

// Rows of several examples: each attention over them is counted at the fraction of its square the
// data's rows leave its tiles (measured: data::RowWork), everything else whole; the real tokens'
// own FLOPs take the tokens' share of the rest and the examples' scores of the attention. One
// example a row, or an attention left unfused (products over the whole square), has no attention
// over rows: the fractions change nothing and no rows figure is given.
TEST(CompileReport, AttentionOverRowsCountsTheTilesTheDataLeaves) {
  const RowFractions measured{128, 0.9, 0.5, 0.75, 2.0};
  TrainingProgram program;
  const CompileReport whole = bert_tiny_rows(run_config::Packing::Pack, {}, &program);
  const CompileReport rows = bert_tiny_rows(run_config::Packing::Pack, measured);
  const auto attention = static_cast<double>(whole.step.flops_attention_over_rows);
  ASSERT_GT(attention, 0.1 * static_cast<double>(whole.step.flops()));  // (bert-tiny's attention is a large share)
  EXPECT_EQ(rows.step.flops_attention_over_rows, whole.step.flops_attention_over_rows);  // (whole squares, both)
  // Each launch of an attention over rows costs 0.75 of its square; its count is rounded down to a
  // FLOP (bert-tiny: 2 layers' forward and backward, 4 launches, so less than 4 FLOPs off).
  double launched = 0, launched_whole = 0;
  int attentions = 0;
  for (const ir::Op& op : program.step.ops()) {
    if (ir::kernel_family(op) != ir::KernelFamily::Attention) continue;
    ++attentions;
    launched += static_cast<double>(launch_cost(program.step, op, std::nullopt, Precision::Fp32, measured).flops);
    launched_whole += static_cast<double>(launch_cost(program.step, op, std::nullopt, Precision::Fp32).flops);
  }
  EXPECT_EQ(attentions, 4);
  EXPECT_NEAR(launched, 0.75 * launched_whole, attentions);
  EXPECT_NEAR(launched_whole, attention, 0);
  const auto k = static_cast<double>(whole.micro_batches);
  EXPECT_NEAR(static_cast<double>(whole.flops_per_step - rows.flops_per_step), k * 0.25 * attention, attentions * k);
  const double rest = static_cast<double>(whole.step.flops()) - attention;
  EXPECT_NEAR(rows.real_token_flops, k * (0.9 * rest + 0.5 * attention), 1);
  EXPECT_EQ(whole.real_token_flops, 0);  // (not measured: no real-token figure)
  EXPECT_EQ(whole.real_token_flops_ratio(), 0);
  // Every share at one half: the real tokens' own FLOPs are half the step's whole (the FLOPs scale
  // with the tokens and the scores alike).
  const CompileReport half = bert_tiny_rows(run_config::Packing::Pack, {128, 0.5, 0.5, 0.5, 2.0});
  EXPECT_NEAR(half.real_token_flops, 0.5 * k * static_cast<double>(whole.step.flops()), 1);
  // Measured fractions of one, as a row of one example computes: the real tokens' FLOPs are the step's.
  const CompileReport full = bert_tiny_rows(run_config::Packing::Pack, {128, 1, 1, 1, 1});
  EXPECT_EQ(full.flops_per_step, whole.flops_per_step);
  EXPECT_NEAR(full.real_token_flops_ratio(), 1, 1e-12);
  const CompileReport unpacked = bert_tiny_rows(run_config::Packing::None, measured);
  EXPECT_EQ(unpacked.flops_per_step, bert_tiny_rows(run_config::Packing::None, {}).flops_per_step);
  EXPECT_FALSE(unpacked.rows.measured());
  const CompileReport unfused = bert_tiny_rows(run_config::Packing::Pack, measured, nullptr, false);
  EXPECT_EQ(unfused.step.flops_attention_over_rows, 0);
  EXPECT_FALSE(unfused.rows.measured());
  EXPECT_EQ(unfused.real_token_flops, 0);
}

}  // namespace
}  // namespace bertc::passes
