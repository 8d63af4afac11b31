// Finite-difference checking of autodiff in double precision, shared by the gradient tests.
#pragma once

#include <functional>
#include <map>
#include <random>
#include <string>

#include "ir/builder.h"
#include "reference/executor.h"

namespace bertc::testing {

using Env = ir::Environment<double>;

// Fills every param of `graph` with values from `fill(name, index)`.
void fill_params(const ir::Graph& graph, Env& env, const std::function<double(const std::string&, int64_t)>& fill);

// The scalar output "loss" of `forward` on env.
double loss_of(const ir::Graph& forward, Env env);

// Gradients "<param>.grad" of `forward` (differentiated here) on env, by param name.
std::map<std::string, std::vector<double>> gradients_of(const ir::Graph& forward, Env env);

// Central difference (L(p + eps d) - L(p - eps d)) / (2 eps) along direction d of param `name`.
double directional_fd(const ir::Graph& forward, const Env& env, const std::string& name, const std::vector<double>& d,
                      double eps);

// Checks autodiff against central differences for every element of every param, within
// abs_tol + rel_tol * |gradient|. Reports each mismatch through gtest.
void expect_gradients_match_fd(const ir::Graph& forward, const Env& env, double eps, double abs_tol, double rel_tol);

}  // namespace bertc::testing
