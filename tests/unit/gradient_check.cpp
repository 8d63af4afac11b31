// Finite-difference helpers for the gradient tests.
#include "gradient_check.h"

#include <gtest/gtest.h>

#include "passes/autodiff.h"

namespace bertc::testing {

void fill_params(const ir::Graph& graph, Env& env, const std::function<double(const std::string&, int64_t)>& fill) {
  for (ir::ValueId p : graph.values_of(ir::OpKind::Param)) {
    const ir::Value& v = graph.value(p);
    auto t = ir::HostTensor<double>::zeros(v.type);
    for (int64_t i = 0; i < t.numel(); ++i) t.real[i] = fill(v.name, i);
    env[v.name] = t;
  }
}

double loss_of(const ir::Graph& forward, Env env) {
  auto result = reference::Executor<double>(forward).run(env, {"loss"});
  return result.fetched.at("loss").real.at(0);
}

std::map<std::string, std::vector<double>> gradients_of(const ir::Graph& forward, Env env) {
  ir::Graph g = forward;
  passes::differentiate(g);
  std::vector<std::string> names;
  for (ir::ValueId p : g.values_of(ir::OpKind::Param)) names.push_back(g.value(p).name + ".grad");
  auto result = reference::Executor<double>(g).run(env, names);
  std::map<std::string, std::vector<double>> out;
  for (const auto& n : names) out[n.substr(0, n.size() - 5)] = result.fetched.at(n).real;
  return out;
}

double directional_fd(const ir::Graph& forward, const Env& env, const std::string& name, const std::vector<double>& d,
                      double eps) {
  Env plus = env, minus = env;
  for (size_t i = 0; i < d.size(); ++i) {
    plus[name].real[i] += eps * d[i];
    minus[name].real[i] -= eps * d[i];
  }
  return (loss_of(forward, plus) - loss_of(forward, minus)) / (2 * eps);
}

void expect_gradients_match_fd(const ir::Graph& forward, const Env& env, double eps, double abs_tol, double rel_tol) {
  const auto grads = gradients_of(forward, env);
  for (const auto& [name, grad] : grads) {
    for (size_t i = 0; i < grad.size(); ++i) {
      std::vector<double> unit(grad.size(), 0.0);
      unit[i] = 1;
      const double fd = directional_fd(forward, env, name, unit, eps);
      EXPECT_NEAR(grad[i], fd, abs_tol + rel_tol * std::abs(grad[i])) << name << "[" << i << "]";
    }
  }
}

}  // namespace bertc::testing
