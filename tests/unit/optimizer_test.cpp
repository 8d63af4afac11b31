// The training passes after autodiff: accumulation over micro-batches and the optimizer graph,
// against AdamW, LAMB, Lion and clipping written out independently here, in double precision.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "ir/builder.h"
#include "ir/op_info.h"
#include "gradient_check.h"
#include "passes/accumulate.h"
#include "passes/autodiff.h"
#include "passes/optimizer.h"
#include "passes/optimizer_shards.h"
#include "passes/precision.h"

namespace bertc::testing {
namespace {

using ir::Builder;
using ir::Tensor;
using ir::DType;
using Tensor64 = ir::HostTensor<double>;

// loss = mean((x @ W^T + bias) * LayerNorm.weight): params with and without weight decay.
ir::Graph model() {
  Builder b("m");
  Tensor x = b.input("x", DType::F32, {4, 3});
  Tensor w = b.param("dense.weight", {2, 3});
  Tensor bias = b.param("dense.bias", {2});
  Tensor scale = b.param("LayerNorm.weight", {2});
  b.output(b.reduce_mean((b.matmul(x, w, false, true) + bias) * scale, {0, 1}), "loss");
  return std::move(b).finish();
}

Tensor64 batch(double shift) {
  auto t = Tensor64::zeros({DType::F32, {4, 3}});
  for (int i = 0; i < 12; ++i) t.real[i] = std::sin(i + shift);
  return t;
}

struct Reference {  // the optimizer written out by hand
  std::string kind;
  double lr, beta1 = 0.9, beta2 = 0.999, eps = 1e-6, wd = 0.01, max_norm;
  int freeze = 0;  // 1-bit Adam: past this step m is given (the exchange's), v stays, c2 is freeze's
  std::map<std::string, std::vector<double>> m, v;

  void step(std::map<std::string, std::vector<double>>& params, std::map<std::string, std::vector<double>> grads, int t,
            double* norm_out) {
    double sq = 0;
    for (auto& [n, g] : grads)
      for (double x : g) sq += x * x;
    const double norm = std::sqrt(sq);
    *norm_out = norm;
    const double factor = max_norm > 0 ? std::min(1.0, max_norm / (norm + 1e-6)) : 1.0;
    for (auto& [n, p] : params) {
      auto& mm = m[n];
      auto& vv = v[n];
      mm.resize(p.size());
      vv.resize(p.size());
      const double decay = passes::exempt_from_weight_decay(n) ? 0 : wd;
      if (kind == "lion") {  // Chen et al. 2023, Algorithm 2: the sign of the interpolation, then m
        for (size_t i = 0; i < p.size(); ++i) {
          const double g = grads[n][i] * factor, c = beta1 * mm[i] + (1 - beta1) * g;
          p[i] -= lr * ((c > 0) - (c < 0) + decay * p[i]);
          mm[i] = beta2 * mm[i] + (1 - beta2) * g;
        }
        continue;
      }
      std::vector<double> u(p.size());
      double pn = 0, un = 0;
      for (size_t i = 0; i < p.size(); ++i) {
        const double g = grads[n][i] * factor;
        const bool frozen = freeze > 0 && t > freeze;
        if (!frozen) mm[i] = beta1 * mm[i] + (1 - beta1) * g;
        if (!frozen) vv[i] = beta2 * vv[i] + (1 - beta2) * g * g;
        const double c2 = 1 - std::pow(beta2, frozen ? freeze : t);
        u[i] = (mm[i] / (1 - std::pow(beta1, t))) / (std::sqrt(vv[i] / c2) + eps) + decay * p[i];
        pn += p[i] * p[i];
        un += u[i] * u[i];
      }
      const double trust = kind == "lamb" && pn > 0 && un > 0 ? std::sqrt(pn) / std::sqrt(un) : 1.0;
      for (size_t i = 0; i < p.size(); ++i) p[i] -= lr * trust * u[i];
    }
  }
};

// With `shards` > 1 (ZeRO stage 1): each shard's graph runs on its own copy of the state, given
// the accumulators' sum of squares as the exchange gives it, and what it updates is taken back:
// the shards together must train as the reference does (and each hold its own params alone).
void train_and_compare(const std::string& kind, double max_norm, int freeze = 0, int shards = 1) {
  const ir::Graph forward = model();
  passes::OptimizerOptions options;
  options.optimizer.kind = *ir::op_kind_from_name(kind);
  options.max_grad_norm = max_norm;
  options.onebit_warmup_steps = freeze;
  options.gradient_accumulation_steps = 2;
  ir::Graph step = forward;
  passes::differentiate(step);
  passes::accumulate_gradients(step);
  const ir::Graph apply = passes::build_optimizer_graph(step, options);
  std::vector<ir::Graph> shard_graphs;
  const std::vector<int> owners = passes::param_owners(step, shards);
  for (int q = 0; q < shards && shards > 1; ++q) {
    passes::OptimizerOptions o = options;
    o.shard = q;
    o.shards = shards;
    shard_graphs.push_back(passes::build_optimizer_graph(step, o));
    // Its params are its shard's, and it keeps no other param's state.
    std::set<std::string> want, got;
    const std::vector<ir::ValueId> params = step.values_of(ir::OpKind::Param);
    for (size_t i = 0; i < params.size(); ++i)
      if (owners[i] == q) want.insert(step.value(params[i]).name);
    for (ir::ValueId p : shard_graphs.back().values_of(ir::OpKind::Param)) got.insert(shard_graphs.back().value(p).name);
    EXPECT_EQ(got, want) << "shard " << q;
    for (ir::ValueId v : shard_graphs.back().values_of(ir::OpKind::State)) {
      const std::string& name = shard_graphs.back().value(v).name;
      const std::string param = name.substr(0, name.rfind('.'));
      if (!name.ends_with(".grad_acc") && step.find(param)) EXPECT_TRUE(want.contains(param)) << name << " in shard " << q;
    }
  }

  Env env;
  fill_params(forward, env, [](const std::string& n, int64_t i) { return 0.5 * std::cos(i + n.size()); });
  for (ir::ValueId s : step.values_of(ir::OpKind::State)) env[step.value(s).name] = Tensor64::zeros(step.value(s).type);
  for (ir::ValueId s : apply.values_of(ir::OpKind::State)) env[apply.value(s).name] = Tensor64::zeros(apply.value(s).type);

  std::map<std::string, std::vector<double>> params;
  for (ir::ValueId p : forward.values_of(ir::OpKind::Param)) params[forward.value(p).name] = env[forward.value(p).name].real;
  Reference ref{kind, 0.05};
  ref.max_norm = max_norm;
  ref.freeze = freeze;

  for (int t = 1; t <= (freeze ? freeze + 2 : 3); ++t) {
    // Past the freeze, the momentum the 1-bit exchange would have made: any vector, here the
    // last one halved and shifted (the optimizer must take it as it is).
    if (freeze && t > freeze)
      for (auto& [n, m] : ref.m)
        for (size_t i = 0; i < m.size(); ++i) {
          m[i] = 0.5 * m[i] + 0.01 * std::sin(double(i) + t);
          env[n + ".exp_avg"].real[i] = m[i];
        }
    std::map<std::string, std::vector<double>> mean_grad;
    for (int micro = 0; micro < 2; ++micro) {
      env["x"] = batch(10 * t + micro);
      for (const auto& [n, g] : gradients_of(forward, env)) {
        auto& acc = mean_grad[n];
        acc.resize(g.size());
        for (size_t i = 0; i < g.size(); ++i) acc[i] += g[i] / 2;
      }
      reference::Executor<double>(step).run(env);
    }
    env["learning_rate"] = Tensor64::scalar(DType::F32, 0.05);
    env["step"] = Tensor64::scalar(DType::I64, t);
    double norm = 0;
    if (shards == 1) {
      norm = reference::Executor<double>(apply).run(env).outputs.at(0).real.at(0);
    } else {
      double squares = 0;
      for (const auto& [n, p] : params)
        for (double a : env[n + ".grad_acc"].real) squares += a * a;
      env["grad_acc_sum_of_squares"] = Tensor64::scalar(DType::F32, squares);
      const Env before = env;
      for (int q = 0; q < shards; ++q) {
        Env mine = before;
        const ir::Graph& g = shard_graphs[static_cast<size_t>(q)];
        const double shard_norm = reference::Executor<double>(g).run(mine).outputs.at(0).real.at(0);
        if (q > 0) EXPECT_EQ(shard_norm, norm) << "the shards' norms differ";
        norm = shard_norm;
        // What this shard updated: its params, their state, the count, the accumulators (zeroed).
        for (ir::OpKind kind : {ir::OpKind::Param, ir::OpKind::State})
          for (ir::ValueId v : g.values_of(kind)) env[g.value(v).name] = mine[g.value(v).name];
      }
    }
    double want_norm = 0;
    ref.step(params, mean_grad, t, &want_norm);
    EXPECT_NEAR(norm, want_norm, 1e-12) << kind << " step " << t;
    for (const auto& [n, p] : params) {
      for (size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(env[n].real[i], p[i], 1e-12) << kind << " " << n << "[" << i << "]";
      for (double a : env[n + ".grad_acc"].real) EXPECT_EQ(a, 0.0) << "accumulator not cleared";
    }
  }
}

TEST(Optimizer, AdamwWithAccumulation) { train_and_compare("adamw", 0.0); }
TEST(Optimizer, AdamwWithClipping) { train_and_compare("adamw", 0.01); }  // small enough to clip every step
TEST(Optimizer, LambWithClipping) { train_and_compare("lamb", 0.01); }
// 1-bit Adam's AdamW: plain for 2 steps, then the exchange's momentum taken and the variance kept
// (bias-corrected as at step 2) for 2 more; clipping too (it scales a gradient the update no
// longer reads).
TEST(Optimizer, AdamwPastItsFreezeStep) { train_and_compare("adamw", 0.01, 2); }
TEST(Optimizer, LionWithClipping) { train_and_compare("lion", 0.01); }
// ZeRO stage 1: the optimizer step split over 2 and 3 shards of whole tensors trains as one
// (clipping by the global norm each shard is given; LAMB's per-tensor trust ratio whole). The
// model's 3 params: 3 shards hold one each.
TEST(Optimizer, AdamwInShards) { train_and_compare("adamw", 0.01, 0, 2); }
TEST(Optimizer, LambInThreeShards) { train_and_compare("lamb", 0.01, 0, 3); }
// More shards than params: the fourth updates nothing (it only clears the accumulators).
TEST(Optimizer, AShardOfNoParams) { train_and_compare("adamw", 0.01, 0, 4); }

TEST(OptimizerShards, LargestFirstToTheLeastLoaded) {
  // 10 -> 0; 7 -> 1; 5 (index 2) -> 1 (7 < 10); 5 (index 3) -> 0 (10 < 12); 3 -> 1 (12 < 15).
  EXPECT_EQ(passes::shard_owners({10, 7, 5, 5, 3}, 2), (std::vector<int>{0, 1, 1, 0, 1}));
  EXPECT_EQ(passes::shard_owners({4, 4, 4}, 1), (std::vector<int>{0, 0, 0}));
  // More shards than tensors: the later shards hold nothing.
  EXPECT_EQ(passes::shard_owners({1, 2}, 4), (std::vector<int>{1, 0}));
  EXPECT_THROW(passes::shard_owners({1}, 0), std::invalid_argument);
}

TEST(OptimizerShards, NoShardHoldsMoreThanTheMeanAndTheLargestTensor) {
  std::vector<int64_t> sizes;
  for (int i = 0; i < 200; ++i) sizes.push_back(1 + (i * 7919) % 1000 + (i % 13 == 0 ? 30000 : 0));
  const int64_t total = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
  const int64_t largest = *std::max_element(sizes.begin(), sizes.end());
  for (int shards : {2, 3, 8}) {
    const std::vector<int> owners = passes::shard_owners(sizes, shards);
    std::vector<int64_t> load(static_cast<size_t>(shards), 0);
    for (size_t i = 0; i < sizes.size(); ++i) load[static_cast<size_t>(owners[i])] += sizes[i];
    for (int64_t l : load) EXPECT_LE(l, total / shards + largest) << shards << " shards";
    EXPECT_EQ(std::accumulate(load.begin(), load.end(), int64_t{0}), total);
  }
}

// The state of every optimizer op of the table is what its operands declare: the pass makes one
// state "<param>.<name>" per param for each, of the param's type, and checkpoints count them as
// optimizer state (not weights) by the same declaration.
TEST(Optimizer, StatesAreWhatEachOptimizerDeclares) {
  ir::Graph step = model();
  passes::differentiate(step);
  passes::accumulate_gradients(step);
  const std::map<std::string, std::vector<std::string>> expected = {
      {"adamw", {"exp_avg", "exp_avg_sq"}}, {"lamb", {"exp_avg", "exp_avg_sq"}}, {"lion", {"exp_avg"}}};
  for (const auto& [name, states] : expected) {
    const ir::OpKind kind = *ir::op_kind_from_name(name);
    EXPECT_EQ(ir::optimizer_states(kind), states) << name;
    passes::OptimizerOptions options;
    options.optimizer.kind = kind;
    const ir::Graph apply = passes::build_optimizer_graph(step, options);
    for (ir::ValueId p : step.values_of(ir::OpKind::Param)) {
      const ir::Value& param = step.value(p);
      for (const std::string& state : states) {
        const std::optional<ir::ValueId> v = apply.find(param.name + "." + state);
        ASSERT_TRUE(v.has_value()) << name << ": no state " << param.name << "." << state;
        EXPECT_EQ(apply.value(*v).type, param.type) << name;
        EXPECT_TRUE(ir::names_optimizer_state(param.name + "." + state));
      }
    }
    size_t state_count = apply.values_of(ir::OpKind::State).size();
    // (each param's accumulator, its declared states, and the step count)
    EXPECT_EQ(state_count, step.values_of(ir::OpKind::Param).size() * (1 + states.size()) + 1) << name;
  }
  EXPECT_FALSE(ir::names_optimizer_state("dense.weight"));
  EXPECT_FALSE(ir::names_optimizer_state("exp_avg"));  // (a param's state has the param's name before it)
  EXPECT_THROW(ir::optimizer_states(ir::OpKind::Add), ir::Error);
}

// Dynamic loss scaling (fp16): the optimizer divides the scale out, so a clean step equals the
// unscaled f32 step; a step with inf or nan anywhere changes no param, moment or step count,
// halves the scale and clears the accumulators; 2000 clean steps in a row double the scale.
struct ScaledTraining {
  ir::Graph apply32, apply16;  // optimizer graphs without and with loss scaling
  Env env32, env16;

  ScaledTraining() {
    ir::Graph plain = model(), scaled = model();
    passes::apply_precision(scaled, passes::Precision::Fp16);
    for (ir::Graph* g : {&plain, &scaled}) {
      passes::differentiate(*g);
      passes::accumulate_gradients(*g);
    }
    passes::OptimizerOptions o;
    o.max_grad_norm = 0.5;  // the gradients below clip: clipping must see the unscaled norm
    apply32 = passes::build_optimizer_graph(plain, o);
    apply16 = passes::build_optimizer_graph(scaled, o);
    for (auto [g, env] : {std::pair{&apply32, &env32}, std::pair{&apply16, &env16}}) {
      fill_params(*g, *env, [](const std::string& n, int64_t i) { return 0.5 * std::cos(i + n.size()); });
      for (ir::ValueId v : g->values_of(ir::OpKind::State)) (*env)[g->value(v).name] = Tensor64::zeros(g->value(v).type);
      (*env)["learning_rate"] = Tensor64::scalar(DType::F32, 0.05);
    }
    env16["loss_scale"] = Tensor64::scalar(DType::F32, 1024);
  }
  // Accumulated gradients g (f32) and scale * g (f16 run), g[i] = sin(i + name length).
  void set_gradients() {
    for (auto& [name, t] : env32)
      if (name.ends_with(".grad_acc"))
        for (size_t i = 0; i < t.real.size(); ++i) {
          t.real[i] = std::sin(i + name.size());
          env16[name].real[i] = env16["loss_scale"].real[0] * t.real[i];
        }
  }
  std::map<std::string, double> run16() {
    std::map<std::string, double> out;
    auto r = reference::Executor<double>(apply16).run(env16, {"grad_norm", "step_skipped", "loss_scale_used"});
    for (auto& [name, t] : r.fetched) out[name] = t.real.at(0);
    return out;
  }
};

TEST(Optimizer, LossScalingCleanStepEqualsUnscaledStep) {
  ScaledTraining t;
  t.set_gradients();
  const double norm32 = reference::Executor<double>(t.apply32).run(t.env32).outputs.at(0).real.at(0);
  const auto out = t.run16();
  EXPECT_EQ(out.at("step_skipped"), 0.0);
  EXPECT_EQ(out.at("loss_scale_used"), 1024.0);
  EXPECT_NEAR(out.at("grad_norm"), norm32, 1e-12 * norm32);  // dividing by 1024 is exact
  for (ir::ValueId p : t.apply32.values_of(ir::OpKind::Param)) {
    const std::string& n = t.apply32.value(p).name;
    for (size_t i = 0; i < t.env32[n].real.size(); ++i) EXPECT_NEAR(t.env16[n].real[i], t.env32[n].real[i], 1e-12) << n;
  }
  EXPECT_EQ(t.env16["loss_scale"].real[0], 1024.0);
  EXPECT_EQ(t.env16["loss_scale_good_steps"].real[0], 1.0);
  EXPECT_EQ(t.env16["optimizer_step"].real[0], 1.0);
}

TEST(Optimizer, LossScalingSkipsAnOverflowingStep) {
  for (double bad : {INFINITY, -INFINITY, NAN}) {
    ScaledTraining t;
    t.set_gradients();
    t.run16();  // one clean step, so the moments are not zero
    const Env before = t.env16;
    t.set_gradients();
    t.env16["dense.weight.grad_acc"].real[3] = bad;
    const auto out = t.run16();
    EXPECT_EQ(out.at("step_skipped"), 1.0) << bad;
    for (const auto& [name, v] : before) {
      if (name.ends_with(".grad_acc")) {
        for (double x : t.env16[name].real) ASSERT_EQ(x, 0.0) << name << ": accumulator not cleared";
      } else if (name == "loss_scale") {
        EXPECT_EQ(t.env16[name].real[0], 512.0);
      } else if (name != "learning_rate") {
        // Params, moments, the step count and the clean-step count as before (good steps: reset).
        const std::vector<double> want = name == "loss_scale_good_steps" ? std::vector<double>{0.0} : v.real;
        EXPECT_EQ(t.env16[name].real, want) << name << " changed on a skipped step (" << bad << ")";
      }
    }
  }
}

TEST(Optimizer, LossScaleGrowsAfter2000CleanSteps) {
  ScaledTraining t;
  t.set_gradients();
  t.env16["loss_scale_good_steps"].real[0] = 1998;
  t.run16();
  EXPECT_EQ(t.env16["loss_scale"].real[0], 1024.0);  // 1999 clean steps: not yet
  t.set_gradients();
  t.run16();
  EXPECT_EQ(t.env16["loss_scale"].real[0], 2048.0);
  EXPECT_EQ(t.env16["loss_scale_good_steps"].real[0], 0.0);
}

TEST(Optimizer, WeightDecayExemptionsFollowTheBertRecipe) {
  EXPECT_TRUE(passes::exempt_from_weight_decay("bert.encoder.layer.0.attention.output.LayerNorm.weight"));
  EXPECT_TRUE(passes::exempt_from_weight_decay("cls.predictions.bias"));
  EXPECT_TRUE(passes::exempt_from_weight_decay("bert.encoder.final_layer_norm.weight"));
  EXPECT_FALSE(passes::exempt_from_weight_decay("bert.embeddings.word_embeddings.weight"));
  EXPECT_FALSE(passes::exempt_from_weight_decay("bert.encoder.layer.0.intermediate.dense.weight"));
}

TEST(Optimizer, RefusesGraphsWithoutAccumulators) {
  ir::Graph g = model();
  EXPECT_THROW(passes::build_optimizer_graph(g, {}), ir::Error);
  passes::differentiate(g);
  passes::accumulate_gradients(g);
  passes::OptimizerOptions bad;
  bad.gradient_accumulation_steps = 0;
  EXPECT_THROW(passes::build_optimizer_graph(g, bad), ir::Error);
}

}  // namespace
}  // namespace bertc::testing
