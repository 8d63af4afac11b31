// Every graph pass leaves the numbers alone: the reference executor gives the same loss and the
// same accumulated gradients (dropout on) before and after attention fusion, recompute,
// fusion and scheduling, and the same updates from the optimizer graph.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "frontend/bert.h"
#include "ir/builder.h"
#include "passes/accumulate.h"
#include "passes/annotate_costs.h"
#include "passes/attention.h"
#include "passes/autodiff.h"
#include "passes/fusion.h"
#include "passes/lower_lamb.h"
#include "passes/memory_plan.h"
#include "passes/optimizer.h"
#include "passes/precision.h"
#include "passes/recompute.h"
#include "passes/schedule.h"
#include "run_config/config.h"
#include "run_folder/initialize.h"
#include "reference/executor.h"

namespace bertc::passes {
namespace {

using Env = ir::Environment<double>;
using ir::DType;

// Two layers, batch 2, sequences of 8.
run_config::Config tiny() {
  run_config::Config c;
  c.name = "eq";
  c.model.vocab_size = 50;
  c.model.hidden_size = 16;
  c.model.num_hidden_layers = 2;
  c.model.num_attention_heads = 2;
  c.model.intermediate_size = 32;
  c.model.max_position_embeddings = 64;
  c.train.batch_size = 2;
  c.train.seq_len = 8;
  c.train.max_predictions_per_seq = 3;
  return c;
}

// Four layers of width 32 and sequences of 64: the layers' activations, not the param
// gradients, are the bulk of the arena, as in real BERTs, so that recompute choices matter.
run_config::Config activation_heavy() {
  run_config::Config c = tiny();
  c.model.hidden_size = 32;
  c.model.intermediate_size = 128;
  c.model.num_hidden_layers = 4;
  c.train.seq_len = 64;
  return c;
}

ir::HostTensor<double> ints(ir::Shape s, std::vector<int64_t> v, DType d = DType::I32) {
  auto t = ir::HostTensor<double>::zeros({d, std::move(s)});
  t.integer = std::move(v);
  return t;
}

// Params, states and one batch for the tiny model: padding (the second sequence's last quarter),
// two segments, unequal weights (one masked position unused), a dropout seed.
Env environment(const ir::Graph& step) {
  support::Environment f32;
  run_folder::initialize_parameters(step, 0.2, 0, 7, f32);
  run_folder::initialize_states(step, f32);
  Env env;
  for (auto& [name, t] : f32) env[name] = ir::convert<double>(t);
  const int64_t S = step.value(*step.find("input_ids")).type.shape[1];
  std::vector<int64_t> ids, types, mask;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t s = 0; s < S; ++s) {
      const bool pad = b == 1 && s >= S * 3 / 4;
      ids.push_back(pad ? 0 : 2 + (b * S + s) * 7 % 47);
      types.push_back(pad ? 0 : s >= S / 2);
      mask.push_back(!pad);
    }
  env["input_ids"] = ints({2, S}, ids);
  env["token_type_ids"] = ints({2, S}, types);
  env["attention_mask"] = ints({2, S}, mask);
  env["masked_lm_positions"] = ints({2, 3}, {1, S / 2, S - 2, 2, S / 2 + 1, 0});
  env["masked_lm_ids"] = ints({2, 3}, {17, 33, 5, 8, 21, 0});
  env["masked_lm_weights"] = ir::HostTensor<double>::zeros({DType::F32, {2, 3}});
  env["masked_lm_weights"].real = {1, 1, 1, 1, 1, 0};
  env["next_sentence_labels"] = ints({2}, {0, 1});
  env["dropout_seed"] = ints({}, {1234}, DType::I64);
  return env;
}

ir::Graph step_graph(bool fused_attention, const run_config::Config& config = tiny()) {
  ir::Graph g = frontend::build_bert_pretraining(config.model_settings());
  if (fused_attention) fuse_attention(g);
  differentiate(g);
  accumulate_gradients(g);
  return g;
}

// Runs one micro-step; returns the loss and leaves the accumulated gradients in env.
double run(const ir::Graph& g, Env& env) {
  return reference::Executor<double>(g).run(env, {"loss"}).fetched.at("loss").real.at(0);
}

// In double precision the passes reorder nothing within an op: results agree to rounding of
// sums taken in another order (1e-12 relative is far below any real difference, 1e-3 and up).
void expect_same(const ir::Graph& before, const ir::Graph& after, const std::string& what) {
  Env a = environment(before), b = environment(before);
  const double la = run(before, a), lb = run(after, b);
  EXPECT_NEAR(la, lb, 1e-12 * std::abs(la)) << what;
  for (const auto& [name, t] : a) {
    if (!name.ends_with(".grad_acc")) continue;
    ASSERT_TRUE(b.count(name)) << what << ": " << name;
    for (size_t i = 0; i < t.real.size(); ++i)
      ASSERT_NEAR(t.real[i], b[name].real[i], 1e-12 + 1e-10 * std::abs(t.real[i])) << what << ": " << name << "[" << i << "]";
  }
}

TEST(PassEquivalence, AttentionFusion) { expect_same(step_graph(false), step_graph(true), "attention"); }

TEST(PassEquivalence, Recompute) {
  for (bool fa : {false, true})
    for (RecomputePolicy policy : {RecomputePolicy::Selective, RecomputePolicy::Full}) {
      ir::Graph g = step_graph(fa);
      recompute(g, policy);
      expect_same(step_graph(fa), g, fmt::format("recompute {}", ir::enum_name(policy)));
    }
}

// Auto between selective and the least memory mixes full recompute of some layers with
// selective on the rest; every choice computes the same numbers.
TEST(PassEquivalence, RecomputeAuto) {
  const ir::Graph none = step_graph(true, activation_heavy());
  auto arena_of = [&](RecomputePolicy policy) {
    ir::Graph g = none;
    recompute(g, policy);
    return plan_memory(g).arena_bytes;
  };
  const int64_t selective = arena_of(RecomputePolicy::Selective), full = arena_of(RecomputePolicy::Full);
  std::printf("arena: none %ld, selective %ld, full %ld bytes\n", static_cast<long>(plan_memory(none).arena_bytes),
              static_cast<long>(selective), static_cast<long>(full));
  std::vector<int64_t> budgets = {plan_memory(none).arena_bytes, selective};
  for (int i = 1; i <= 8; ++i) budgets.push_back(selective - (selective - full) * i / 8);
  std::set<std::string> policies;
  for (int64_t budget : budgets) {
    ir::Graph g = none;
    const RecomputeResult r = recompute(g, RecomputePolicy::Auto, budget);
    EXPECT_LE(plan_memory(g).arena_bytes, budget) << r.policy;
    expect_same(none, g, r.policy);
    policies.insert(r.policy);
  }
  EXPECT_TRUE(policies.count("auto: none"));
  EXPECT_TRUE(policies.count("auto: selective"));
  EXPECT_TRUE(policies.count("auto: full on 1 of 4 layers, selective on the rest"))
      << fmt::format("{}", fmt::join(policies, "; "));
  ir::Graph g = none;
  EXPECT_THROW(recompute(g, RecomputePolicy::Auto, 256), ir::Error);  // no plan of this model fits 256 bytes
}

// The cost annotation sets attributes the reference never reads: the numbers stay, the figures appear.
TEST(PassEquivalence, AnnotateCosts) {
  ir::Graph fused = step_graph(true);
  fuse(fused);
  ir::Graph annotated = fused;
  annotate_costs(annotated, find_gpu("h200"), Precision::Fp32);
  expect_same(fused, annotated, "annotate-costs");
  int64_t flops = 0;
  double time_us = 0;
  for (const ir::Op& op : annotated.ops())
    if (op.kind == ir::OpKind::Fused) flops += op.attr<int64_t>("flops"), time_us += op.attr<double>("time_us");
  EXPECT_GT(flops, 0);
  EXPECT_GT(time_us, 0.0);
}

// LAMB lowered to reductions and elementwise ops updates params and moments as the lamb op does:
// three optimizer steps (bias corrections of steps 1 to 3) after a micro-step's gradients, in
// double, where the only difference is exp(step ln b) for pow(b, step) (1e-15 relative); 1e-12
// allows that. Also after fusing and scheduling the lowered graph (three kernels' regions).
// And 1-bit LAMB's (freeze_step = 1): steps 2 and 3 take exp_avg as the momentum and keep exp_avg_sq
// (bias-corrected as at step 1), the lowered graph's selects against the op's branch.
TEST(PassEquivalence, LowerLamb) {
  for (const int64_t freeze : {0, 1}) {
    SCOPED_TRACE(freeze ? "1-bit LAMB, freeze_step = 1" : "LAMB");
    const ir::Graph step = step_graph(true);
    OptimizerOptions o;
    o.optimizer.kind = ir::OpKind::Lamb;
    o.onebit_warmup_steps = freeze;  // (the lamb ops' freeze_step)
    const ir::Graph with_op = build_optimizer_graph(step, o);
    ir::Graph lowered = with_op;
    EXPECT_EQ(lower_lamb(lowered), step.values_of(ir::OpKind::Param).size());
    for (const ir::Op& op : lowered.ops()) ASSERT_NE(op.kind, ir::OpKind::Lamb);
    ir::Graph fused = lowered;
    fuse(fused);
    schedule_for_memory(fused);
    Env start = environment(step);
    run(step, start);
    support::Environment moments;  // zero moments and step count
    run_folder::initialize_states(with_op, moments);
    for (auto& [name, t] : moments)
      if (!start.count(name)) start[name] = ir::convert<double>(t);
    start["learning_rate"] = ir::HostTensor<double>::zeros({DType::F32, {}});
    start["learning_rate"].real[0] = 1e-2;
    for (const ir::Graph* g : {&lowered, &fused}) {
      Env a = start, b = start;
      std::vector<double> first_variance;
      for (int s = 0; s < 3; ++s) {
        reference::Executor<double>(with_op).run(a, {});
        reference::Executor<double>(*g).run(b, {});
        if (s == 0) first_variance = a.at("bert.pooler.dense.weight.exp_avg_sq").real;
      }
      // (frozen: the variance of step 1 kept; else it moved on with steps 2 and 3' gradients)
      EXPECT_EQ(a.at("bert.pooler.dense.weight.exp_avg_sq").real == first_variance, freeze > 0);
      size_t compared = 0;
      for (const auto& [name, t] : a) {
        if (!t.is_real()) continue;
        double largest = 0;
        for (double x : t.real) largest = std::max(largest, std::abs(x));
        for (size_t i = 0; i < t.real.size(); ++i)
          ASSERT_NEAR(t.real[i], b[name].real[i], 1e-12 * largest + 1e-300) << name << "[" << i << "]";
        compared += name.ends_with(".exp_avg_sq");
      }
      EXPECT_EQ(compared, step.values_of(ir::OpKind::Param).size());
      EXPECT_NE(a.at("bert.pooler.dense.weight").real, start.at("bert.pooler.dense.weight").real);  // it did step
    }
  }
}

TEST(PassEquivalence, FusionAndSchedule) {
  for (bool fa : {false, true}) {
    ir::Graph g = step_graph(fa);
    const FusionResult r = fuse(g);
    EXPECT_LT(r.kernels_after, r.kernels_before);
    expect_same(step_graph(fa), g, "fusion");
    schedule_for_memory(g);
    expect_same(step_graph(fa), g, "fusion + schedule");
  }
}
// A chain of 200,000 pointwise ops (the depth at which a recursive walk of it overflowed the
// stack): fusion makes one forward and one backward kernel of it, and the loss and gradient stay
// as before (to rounding: the same ops in the same order, in double precision).
TEST(PassEquivalence, FusionOfAVeryLongChain) {
  ir::Builder b("chain");
  ir::Tensor x = b.input("x", DType::F32, {2, 2});
  ir::Tensor w = b.param("w", {2, 2});
  ir::Tensor y = x * w;
  for (int i = 0; i < 100000; ++i) y = tanh(y) + w;
  b.output(b.reduce_sum(y, {0, 1}), "loss");
  ir::Graph g = std::move(b).finish();
  differentiate(g);
  accumulate_gradients(g);
  ir::Graph fused = g;
  const FusionResult r = fuse(fused);
  EXPECT_GT(r.kernels_before, 300000u);
  EXPECT_LE(r.kernels_after, 4u);  // forward, backward, the weight gradient's sum, its accumulation
  auto environment = [] {
    Env env;
    env["x"] = ir::HostTensor<double>::zeros({DType::F32, {2, 2}});
    env["x"].real = {0.5, -0.25, 1.0, 2.0};
    env["w"] = ir::HostTensor<double>::zeros({DType::F32, {2, 2}});
    env["w"].real = {0.1, -0.2, 0.3, 0.05};
    env["w.grad_acc"] = ir::HostTensor<double>::zeros({DType::F32, {2, 2}});
    return env;
  };
  Env a = environment(), c = environment();
  const double before = run(g, a), after = run(fused, c);
  EXPECT_NEAR(before, after, 1e-12 * std::abs(before));
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(a["w.grad_acc"].real[i], c["w.grad_acc"].real[i], 1e-9);
}

// Reduced precision changes the numbers by rounding only. The reference rounds every value the IR
// types f16 or bf16, so the difference to f32 is real (asserted non-zero) and bounded by the
// storage format: bf16 keeps 8 significant bits (unit roundoff 2^-9 = 0.2%), f16 11 bits
// (2^-12 = 0.024%). The deepest gradient (the embeddings') passes through about twenty rounded
// values (both layers' forward and backward, and the heads), so a tensor's relative L2 error may
// reach twenty roundoffs: 3.9% for bf16, 0.49% for f16 (measured: at most 1.8% and 0.42%);
// `tol` is 1.5 times that. A wrong pass (a missing cast, an unscaled gradient) is off by O(1).
// The loss has the same bound.
void expect_close_to_f32(const std::string& precision, double tol) {
  const ir::Graph f32 = step_graph(true);
  ir::Graph reduced = frontend::build_bert_pretraining(tiny().model_settings());
  fuse_attention(reduced);
  apply_precision(reduced, ir::enum_named<Precision>(precision));
  differentiate(reduced);
  accumulate_gradients(reduced);
  Env a = environment(f32), b = environment(reduced);
  // Both f16 formats underflow where bf16 does not: they scale the loss (by 65536 at first).
  ASSERT_EQ(b.count("loss_scale"), precision == "bf16" ? 0u : 1u) << precision;
  // 65536 overflows f16 (max 65504) in this model's larger gradients, which would make the
  // optimizer skip the step; 1024 is what the scale halves down to within a few steps.
  const double scale = b.count("loss_scale") ? 1024.0 : 1.0;
  if (b.count("loss_scale")) b["loss_scale"].real.at(0) = scale;
  const double la = run(f32, a), lb = run(reduced, b);
  EXPECT_NEAR(la, lb, tol * std::abs(la)) << precision;
  EXPECT_NE(la, lb) << precision << ": no rounding happened";
  struct Error {
    double f32_norm, reduced_norm, relative;
  };
  std::map<std::string, Error> errors;
  double smallest_norm = INFINITY;
  for (const auto& [name, t] : a) {
    if (!name.ends_with(".grad_acc")) continue;
    ASSERT_TRUE(b.count(name)) << precision << ": " << name;
    double d2 = 0, f2 = 0, r2 = 0;
    for (size_t i = 0; i < t.real.size(); ++i) {
      const double r = b[name].real[i] / scale;
      d2 += (t.real[i] - r) * (t.real[i] - r);
      f2 += t.real[i] * t.real[i];
      r2 += r * r;
    }
    errors[name] = {std::sqrt(f2), std::sqrt(r2), std::sqrt(d2 / f2)};
    if (std::sqrt(f2) > 1e-9) smallest_norm = std::min(smallest_norm, std::sqrt(f2));
  }
  double worst = 0;
  for (const auto& [name, e] : errors) {
    if (e.f32_norm > 1e-9) {
      EXPECT_LE(e.relative, tol) << precision << ": " << name;
      worst = std::max(worst, e.relative);
    } else {
      // The key bias's gradient vanishes in exact arithmetic (softmax ignores a shift common to a
      // row of scores): in reduced precision it is rounding noise, below the error any real
      // gradient may have.
      EXPECT_LE(e.reduced_norm, tol * smallest_norm) << precision << ": " << name;
    }
  }
  EXPECT_GT(worst, 0) << precision << ": gradients identical to f32";
  std::printf("%s: loss %.6f vs f32 %.6f; largest relative L2 error of a gradient %.2e\n", precision.c_str(), lb, la,
              worst);
}

TEST(PassEquivalence, PrecisionBf16) { expect_close_to_f32("bf16", 6e-2); }
TEST(PassEquivalence, PrecisionFp16WithLossScaling) { expect_close_to_f32("fp16", 7.5e-3); }
// The reference computes in f32 for both f16 formats, so this matches fp16 here; on a GPU
// fp16 multiplies on tensor cores where fp32-fp16storage does f32 arithmetic.
TEST(PassEquivalence, PrecisionFp16Storage) { expect_close_to_f32("fp32-fp16storage", 7.5e-3); }

// Fresh params depend on the seed and each param's name, not on where the passes put it.
TEST(PassEquivalence, InitializationIgnoresOpOrder) {
  ir::Graph g = step_graph(true);
  support::Environment before, after;
  run_folder::initialize_parameters(g, 0.02, 0, 99, before);
  fuse(g);
  schedule_for_memory(g);
  run_folder::initialize_parameters(g, 0.02, 0, 99, after);
  ASSERT_EQ(before.size(), after.size());
  for (const auto& [name, t] : before) EXPECT_EQ(t.real, after.at(name).real) << name;
}

}  // namespace
}  // namespace bertc::passes
