// The training passes after autodiff: accumulation over micro-batches and the optimizer graph,
// against AdamW, LAMB and clipping written out independently here, in double precision.
#include <gtest/gtest.h>

#include <cmath>

#include "frontend/builder.h"
#include "gradient_check.h"
#include "passes/accumulate.h"
#include "passes/autodiff.h"
#include "passes/optimizer.h"

namespace bertc::testing {
namespace {

using frontend::Builder;
using frontend::Tensor;
using ir::DType;
using Tensor64 = reference::HostTensor<double>;

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
      std::vector<double> u(p.size());
      double pn = 0, un = 0;
      for (size_t i = 0; i < p.size(); ++i) {
        const double g = grads[n][i] * factor;
        mm[i] = beta1 * mm[i] + (1 - beta1) * g;
        vv[i] = beta2 * vv[i] + (1 - beta2) * g * g;
        u[i] = (mm[i] / (1 - std::pow(beta1, t))) / (std::sqrt(vv[i] / (1 - std::pow(beta2, t))) + eps) + decay * p[i];
        pn += p[i] * p[i];
        un += u[i] * u[i];
      }
      const double trust = kind == "lamb" && pn > 0 && un > 0 ? std::sqrt(pn) / std::sqrt(un) : 1.0;
      for (size_t i = 0; i < p.size(); ++i) p[i] -= lr * trust * u[i];
    }
  }
};

void train_and_compare(const std::string& kind, double max_norm) {
  const ir::Graph forward = model();
  passes::OptimizerOptions options;
  options.kind = kind;
  options.max_grad_norm = max_norm;
  options.accumulation_steps = 2;
  ir::Graph step = forward;
  passes::differentiate(step);
  passes::accumulate_gradients(step);
  const ir::Graph apply = passes::build_optimizer_graph(step, options);

  Env env;
  fill_params(forward, env, [](const std::string& n, int64_t i) { return 0.5 * std::cos(i + n.size()); });
  for (ir::ValueId s : step.values_of(ir::OpKind::State)) env[step.value(s).name] = Tensor64::zeros(step.value(s).type);
  for (ir::ValueId s : apply.values_of(ir::OpKind::State)) env[apply.value(s).name] = Tensor64::zeros(apply.value(s).type);

  std::map<std::string, std::vector<double>> params;
  for (ir::ValueId p : forward.values_of(ir::OpKind::Param)) params[forward.value(p).name] = env[forward.value(p).name].real;
  Reference ref{kind, 0.05};
  ref.max_norm = max_norm;

  for (int t = 1; t <= 3; ++t) {
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
    const double norm = reference::Executor<double>(apply).run(env).outputs.at(0).real.at(0);
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
  bad.kind = "sgd";
  EXPECT_THROW(passes::build_optimizer_graph(g, bad), ir::Error);
}

}  // namespace
}  // namespace bertc::testing
