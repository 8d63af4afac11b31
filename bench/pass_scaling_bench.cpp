// Benchmark: how each pass's time grows with the number of ops. Builds op chains of growing
// length, runs the training pipeline's passes on each one by one, and prints microseconds per
// forward op per pass and the ratio of the longest chain's figure to the shortest's (flat = linear; the
// target is within 2x from 10k to 1M ops). No pass/fail.
//
//   bertc-bench-pass-scaling [--lengths 10000,100000,1000000] [--shape pointwise|blocks]
//
// Shapes: `pointwise` is one long elementwise chain (one fused kernel); `blocks` is a chain of
// small blocks, each with its own weights (matmul with a bias and GELU epilogue, then a layer
// norm), many kernels: the shape of a very deep model, where a group's cost must not depend on
// the graph's size.
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "ir/builder.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/accumulate.h"
#include "passes/autodiff.h"
#include "passes/dce.h"
#include "passes/fusion.h"
#include "passes/memory_plan.h"
#include "passes/recompute.h"
#include "passes/schedule.h"

using namespace bertc;

namespace {

enum class ChainShape { Pointwise, Blocks };

// A forward graph of about `ops` ops ending in a scalar loss.
ir::Graph build_chain(size_t ops, ChainShape shape) {
  ir::Builder b("chain");
  if (shape == ChainShape::Pointwise) {
    ir::Tensor x = b.input("x", ir::DType::F32, {8, 64});
    ir::Tensor w = b.param("w", {8, 64});
    ir::Tensor y = x * w;
    for (size_t i = 0; i + 3 < ops; i += 2) y = gelu(y) + w;
    b.output(b.reduce_sum(y, {0, 1}), "loss");
  } else {
    ir::Tensor y = b.input("x", ir::DType::F32, {8, 16});
    // Each block: its own weights (as each layer of a deep model), matmul, broadcast, add, gelu,
    // layer norm (5 ops and 4 params).
    for (size_t i = 0; i + 10 < ops; i += 9) {
      const std::string layer = fmt::format("layer.{}.", i / 9);
      ir::Tensor w = b.param(layer + "w", {16, 16}), bias = b.param(layer + "bias", {16});
      ir::Tensor ln_w = b.param(layer + "ln.weight", {16}), ln_b = b.param(layer + "ln.bias", {16});
      y = b.layer_norm(gelu(b.matmul(y, w) + b.broadcast(bias, {8, 16})), ln_w, ln_b, 1e-12);
    }
    b.output(b.reduce_sum(y, {0, 1}), "loss");
  }
  return std::move(b).finish();
}

double seconds(const std::function<void()>& f) {
  const auto t = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

struct Stage {
  std::string name;
  std::function<void(ir::Graph&)> run;
};

std::vector<Stage> stages() {
  return {
      {"verify", [](ir::Graph& g) { ir::verify_or_throw(g); }},
      {"print+parse", [](ir::Graph& g) { g = ir::parse(ir::print(g)); }},
      {"autodiff", [](ir::Graph& g) { passes::differentiate(g); }},
      {"accumulate", [](ir::Graph& g) { passes::accumulate_gradients(g); }},
      {"dce", [](ir::Graph& g) { passes::eliminate_dead_code(g); }},
      {"recompute", [](ir::Graph& g) { passes::recompute(g, passes::RecomputePolicy::Selective); }},
      {"fusion", [](ir::Graph& g) { passes::fuse(g); }},
      {"schedule", [](ir::Graph& g) { passes::schedule_for_memory(g); }},
      {"memory-plan", [](ir::Graph& g) { (void)passes::plan_memory(g); }},
  };
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Per-op time of each pass over op chains of growing length");
  std::vector<size_t> lengths{10000, 30000, 100000, 300000, 1000000};
  std::string shape_name = "pointwise";
  app.add_option("--lengths", lengths, "chain lengths in ops")->delimiter(',');
  app.add_option("--shape", shape_name, "pointwise or blocks")->check(CLI::IsMember({"pointwise", "blocks"}));
  CLI11_PARSE(app, argc, argv);
  const ChainShape shape = shape_name == "pointwise" ? ChainShape::Pointwise : ChainShape::Blocks;

  const std::vector<Stage> all = stages();
  std::vector<std::vector<double>> per_op(all.size());
  std::printf("%-12s", "us/op");
  for (size_t n : lengths) std::printf(" %12zu", n);
  std::printf("   last/first\n");
  for (size_t n : lengths) {
    ir::Graph g = build_chain(n, shape);
    std::fprintf(stderr, "%zu ops (%s):", g.ops().size(), shape_name.c_str());
    // Per op of the forward chain: after fusion a graph has a few ops holding the rest in regions,
    // so the pass's own input size would not compare across stages.
    const size_t ops = g.ops().size();
    for (size_t s = 0; s < all.size(); ++s) {
      const double t = seconds([&] { all[s].run(g); });
      per_op[s].push_back(1e6 * t / static_cast<double>(ops));
      std::fprintf(stderr, " %s %.2fs (%zu ops)", all[s].name.c_str(), t, g.ops().size());
    }
    std::fprintf(stderr, "\n");
  }
  for (size_t s = 0; s < all.size(); ++s) {
    std::printf("%-12s", all[s].name.c_str());
    for (double t : per_op[s]) std::printf(" %12.3f", t);
    std::printf("   %.2fx\n", per_op[s].back() / per_op[s].front());
  }
  return 0;
}
