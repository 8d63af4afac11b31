// Autodiff against central finite differences in double precision: every op's gradient rule,
// then the whole bert-tiny loss.
//
// Tolerance: with step eps = 1e-6 in double, the central difference's truncation error is
// O(eps^2 * |f'''|) ~ 1e-12 and its rounding error O(1e-16 * |loss| / eps) ~ 1e-10 for losses of
// order 1, so 1e-8 absolute plus 1e-6 relative passes every right gradient and fails a wrong one
// (a missing term or wrong transpose is off by O(1)).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "frontend/bert.h"
#include "gradient_check.h"
#include "ir/op_info.h"
#include "ir/verifier.h"
#include "passes/autodiff.h"
#include "run_config/config.h"

namespace bertc::testing {
namespace {

using ir::Builder;
using ir::Tensor;
using ir::DType;
using ir::OpKind;

constexpr double kEps = 1e-6, kAbsTol = 1e-8, kRelTol = 1e-6;

// Smooth, deterministic, different per param and element, in (-1, 1).
double wobble(const std::string& name, int64_t i) {
  return 0.9 * std::sin(1.7 * static_cast<double>(i) + 0.37 * static_cast<double>(name.size()) + 0.1);
}

ir::HostTensor<double> filled(ir::TensorType type, double scale = 1.0) {
  auto t = ir::HostTensor<double>::zeros(type);
  for (int64_t i = 0; i < t.numel(); ++i) t.real[i] = scale * std::cos(0.9 * static_cast<double>(i) + 0.2);
  return t;
}

// loss = sum(body * probe) over all elements (a fixed probe makes every output element count).
ir::Graph rule_graph(const std::function<Tensor(Builder&)>& body, Env& env) {
  Builder b("t");
  Tensor y = body(b);
  if (y.rank() > 0) {
    Tensor probe = b.input("probe", y.dtype(), y.shape());
    env["probe"] = filled(y.type());
    std::vector<int64_t> axes(y.rank());
    std::iota(axes.begin(), axes.end(), 0);
    y = b.reduce_sum(y * probe, axes);
  }
  b.output(b.cast(y, DType::F32), "loss");
  ir::Graph g = std::move(b).finish();
  fill_params(g, env, wobble);
  return g;
}

// What a group of rule cases does with each: checks it against finite differences (the groups'
// tests), or lists the ops its graph holds (EveryOpWithARuleIsChecked).
struct RuleCases {
  std::function<void(const std::function<Tensor(Builder&)>&, Env)> each;
  void operator()(const std::function<Tensor(Builder&)>& body, Env env = {}) const { each(body, std::move(env)); }
};
const RuleCases check_rule{[](const std::function<Tensor(Builder&)>& body, Env env) {
  const ir::Graph g = rule_graph(body, env);
  expect_gradients_match_fd(g, env, kEps, kAbsTol, kRelTol);
}};

Tensor positive(Tensor x) { return x * x + 0.5; }

void unary_ops(const RuleCases& check) {
  const ir::Shape s{2, 3};
  check([&](Builder& b) { return -b.param("x", s); });
  check([&](Builder& b) { return exp(b.param("x", s)); });
  check([&](Builder& b) { return expm1(b.param("x", s)); });
  check([&](Builder& b) { return log(positive(b.param("x", s))); });
  check([&](Builder& b) { return sqrt(positive(b.param("x", s))); });
  check([&](Builder& b) { return rsqrt(positive(b.param("x", s))); });
  check([&](Builder& b) { return tanh(b.param("x", s)); });
  check([&](Builder& b) { return gelu(b.param("x", s) * 3.0); });
  check([&](Builder& b) { return relu(b.param("x", s)); });
  check([&](Builder& b) { return leaky_relu(b.param("x", s), 0.2); });
  check([&](Builder& b) { return b.op(ir::OpKind::Sigmoid, {b.param("x", s) * 3.0}); });
}
TEST(Gradients, UnaryOps) { unary_ops(check_rule); }

void broadcasting_binary_ops(const RuleCases& check) {
  check([](Builder& b) { return b.param("a", {2, 3}) + b.param("bias", {3}); });
  check([](Builder& b) { return b.param("a", {2, 1}) - b.param("b", {1, 3}); });
  check([](Builder& b) { return b.param("a", {2, 3}) * b.param("b", {3}); });
  check([](Builder& b) { return b.param("a", {2, 3}) / positive(b.param("b", {2, 1})); });
  check([](Builder& b) {
    Tensor a = b.param("a", {3});
    return a * a;  // one value reaching an op twice: contributions add up
  });
}
TEST(Gradients, BroadcastingBinaryOps) { broadcasting_binary_ops(check_rule); }

void matmul_every_transpose_and_batch_layout(const RuleCases& check) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      check([&](Builder& b) {
        Tensor a = b.param("a", ta ? ir::Shape{4, 3} : ir::Shape{3, 4});
        Tensor w = b.param("w", tb ? ir::Shape{5, 4} : ir::Shape{4, 5});
        return b.matmul(a, w, ta, tb);
      });
  // Batched activations against a shared weight (the folded path), both weight layouts.
  for (bool tb : {false, true})
    check([&](Builder& b) {
      return b.matmul(b.param("x", {2, 3, 4}), b.param("w", tb ? ir::Shape{5, 4} : ir::Shape{4, 5}), false, tb);
    });
  // Broadcast batch dims on both sides, and attention's q @ k^T.
  check([](Builder& b) { return b.matmul(b.param("a", {2, 1, 3, 4}), b.param("b", {3, 4, 2})); });
  check([](Builder& b) { return b.matmul(b.param("q", {2, 2, 3, 4}), b.param("k", {2, 2, 3, 4}), false, true); });
}
TEST(Gradients, MatmulEveryTransposeAndBatchLayout) { matmul_every_transpose_and_batch_layout(check_rule); }

void reductions_and_layout(const RuleCases& check) {
  check([](Builder& b) { return b.reduce_sum(b.param("x", {2, 3, 4}), {0, 2}, true); });
  check([](Builder& b) { return b.reduce_mean(b.param("x", {2, 3, 4}), {1}); });
  check([](Builder& b) { return b.permute(b.reshape(b.param("x", {2, 6}), {2, 3, 2}), {2, 0, 1}); });
  check([](Builder& b) { return b.broadcast(b.param("x", {3, 1}), {2, 3, 4}); });
  check([](Builder& b) { return b.slice(b.param("x", {3, 5}), 1, 1, 4); });
  check([](Builder& b) {
    Tensor x = b.param("x", {2, 3});
    return b.concat({x, b.param("y", {2, 2}), x}, 1);
  });
  check([](Builder& b) {
    return b.op(OpKind::Pad, {b.param("x", {2, 2})}, {{"axis", int64_t{0}}, {"before", int64_t{1}}, {"after", int64_t{2}}});
  });
  check([](Builder& b) { return b.cast(b.cast(b.param("x", {3}), DType::F64) * 2.0, DType::F32); });
}
TEST(Gradients, ReductionsAndLayout) { reductions_and_layout(check_rule); }

void gather(const RuleCases& check) {
  Env env;
  auto ids = ir::HostTensor<double>::zeros({DType::I32, {2, 3}});
  ids.integer = {4, 0, 4, 1, 2, 0};
  env["ids"] = ids;
  check([](Builder& b) { return b.gather(b.param("table", {5, 3}), b.input("ids", DType::I32, {2, 3})); }, env);
  auto pos = ir::HostTensor<double>::zeros({DType::I32, {2, 2}});
  pos.integer = {2, 0, 1, 1};
  check([](Builder& b) { return b.gather(b.param("x", {2, 3, 4}), b.input("pos", DType::I32, {2, 2}), 1); },
             {{"pos", pos}});
}
TEST(Gradients, Gather) { gather(check_rule); }

// padding_idx deliberately departs from the true gradient (as nn.Embedding's does): row 0 gets none.
TEST(Gradients, GatherPaddingRowGetsNoGradient) {
  Builder b("t");
  Tensor table = b.param("table", {3, 2});
  Tensor ids = b.input("ids", DType::I32, {4});
  Tensor g = b.gather(table, ids, 0, 0);
  b.output(b.reduce_sum(g, {0, 1}), "loss");
  ir::Graph graph = std::move(b).finish();
  Env env;
  fill_params(graph, env, wobble);
  auto i = ir::HostTensor<double>::zeros({DType::I32, {4}});
  i.integer = {0, 2, 0, 2};
  env["ids"] = i;
  EXPECT_EQ(gradients_of(graph, env).at("table"), (std::vector<double>{0, 0, 0, 0, 2, 2}));
}

void composite_ops(const RuleCases& check) {
  check([](Builder& b) { return b.softmax(b.param("x", {2, 5}) * 2.0); });
  check([](Builder& b) {
    return b.layer_norm(b.param("x", {3, 4}), b.param("w", {4}), b.param("bias", {4}), 1e-5);
  });
  Env seed{{"dropout_seed", ir::HostTensor<double>::scalar(DType::I64, 1234)}};
  check([](Builder& b) { return b.dropout(b.param("x", {4, 8}), 0.3); }, seed);
  Env labels;
  auto y = ir::HostTensor<double>::zeros({DType::I32, {4}});
  y.integer = {2, 0, -100, 1};  // row 2 is ignored
  labels["y"] = y;
  labels["w"] = ir::HostTensor<double>::zeros({DType::F32, {4}});
  labels["w"].real = {1, 0.5, 1, 0};  // row 3 has weight 0
  check([](Builder& b) {
    return b.cross_entropy(b.param("logits", {4, 3}) * 3.0, b.input("y", DType::I32, {4}), b.input("w", DType::F32, {4}));
  }, labels);
  check([](Builder& b) { return b.cross_entropy(b.param("logits", {4, 3}), b.input("y", DType::I32, {4})); }, labels);
}
TEST(Gradients, CompositeOps) { composite_ops(check_rule); }

void fused_attention_and_where(const RuleCases& check) {
  Env env{{"dropout_seed", ir::HostTensor<double>::scalar(DType::I64, 77)}};
  env["bias"] = filled({DType::F32, {2, 1, 1, 5}}, 2.0);
  for (double p : {0.0, 0.25})
    check([p](Builder& b) {
      std::vector<Tensor> in{b.param("q", {2, 2, 3, 4}), b.param("k", {2, 2, 5, 4}), b.param("v", {2, 2, 5, 4}),
                             b.input("bias", DType::F32, {2, 1, 1, 5})};
      if (p > 0) in.push_back(b.input("dropout_seed", DType::I64, {}));
      return b.ops(OpKind::Attention, in, {{"scale", 0.7}, {"p", p}, {"offset", int64_t{3}}})[0];
    }, env);
  // The packed form: q, k, v at index 0, 1, 2 of qkv's third dim, out [B,S,h,d]; its one gradient
  // is dq, dk, dv packed the same way.
  env["bias"] = filled({DType::F32, {2, 1, 1, 5}}, 2.0);
  for (double p : {0.0, 0.25})
    check([p](Builder& b) {
      std::vector<Tensor> in{b.param("qkv", {2, 5, 3, 2, 4}), b.input("bias", DType::F32, {2, 1, 1, 5})};
      if (p > 0) in.push_back(b.input("dropout_seed", DType::I64, {}));
      return b.ops(OpKind::AttentionQkv, in, {{"scale", 0.7}, {"p", p}, {"offset", int64_t{3}}})[0];
    }, env);
  Env cond{{"c", filled({DType::F32, {2, 3}})}};
  check([](Builder& b) {
    return b.op(OpKind::Where, {b.input("c", DType::F32, {2, 3}), b.param("a", {2, 3}), b.param("bias", {3})});
  }, cond);
}
TEST(Gradients, FusedAttentionAndWhere) { fused_attention_and_where(check_rule); }

// Every group of rule cases above.
const std::vector<void (*)(const RuleCases&)> kRuleGroups = {
    unary_ops, broadcasting_binary_ops, matmul_every_transpose_and_batch_layout, reductions_and_layout, gather,
    composite_ops, fused_attention_and_where};

// The ops ops.def gives a gradient rule (Rule) that no case of `groups` holds.
std::vector<std::string> rules_without_a_case(const std::vector<void (*)(const RuleCases&)>& groups) {
  std::set<OpKind> seen;
  // The case's own ops only: not the product with the probe, the sum and the cast that
  // rule_graph puts around every case, which would count mul, reduce_sum and cast as checked.
  const RuleCases record{[&](const std::function<Tensor(Builder&)>& body, Env) {
    Builder b("t");
    b.output(body(b), "case_result");
    for (const ir::Op& op : std::move(b).finish().ops()) seen.insert(op.kind);
  }};
  for (auto group : groups) group(record);
  std::vector<std::string> missing;
  for (const ir::OpInfo& info : ir::all_ops())
    if (ir::has_gradient_rule(info.kind) && !seen.contains(info.kind)) missing.emplace_back(info.name);
  return missing;
}

// A new op with a gradient rule (ops.def: Rule; autodiff will not compile without its case) gets
// a finite-difference case here too.
TEST(Gradients, EveryOpWithARuleIsChecked) {
  EXPECT_EQ(rules_without_a_case(kRuleGroups), std::vector<std::string>{})
      << "ops with a gradient rule (ir/ops.def: Rule) and no finite-difference case in this file: add one";
  // The check itself, with a group left out (a planted gap): the unary ops go missing.
  std::vector<void (*)(const RuleCases&)> fewer(kRuleGroups.begin() + 1, kRuleGroups.end());
  const std::vector<std::string> gap = rules_without_a_case(fewer);
  EXPECT_NE(std::find(gap.begin(), gap.end(), "exp"), gap.end());
  EXPECT_NE(std::find(gap.begin(), gap.end(), "sigmoid"), gap.end());
  // Gather's cases alone: what the harness adds around them is not counted as checked.
  const std::vector<std::string> gather_only = rules_without_a_case({gather});
  for (const char* harness : {"mul", "reduce_sum", "cast"})
    EXPECT_NE(std::find(gather_only.begin(), gather_only.end(), harness), gather_only.end()) << harness;
}

TEST(Gradients, ParamsTheLossIgnoresGetZeros) {
  Builder b("t");
  Tensor used = b.param("used", {2});
  b.param("unused", {3});
  b.output(b.reduce_sum(used * used, {0}), "loss");
  ir::Graph g = std::move(b).finish();
  Env env;
  fill_params(g, env, [](const std::string&, int64_t i) { return double(i + 1); });
  auto grads = gradients_of(g, env);
  EXPECT_EQ(grads.at("used"), (std::vector<double>{2, 4}));
  EXPECT_EQ(grads.at("unused"), (std::vector<double>{0, 0, 0}));
}

TEST(Gradients, OpsWithoutARuleAreNamed) {
  Builder b("t");
  Tensor x = b.param("x", {2});
  b.output(b.reduce_sum(b.op(OpKind::Maximum, {x, b.constant(0.0)}), {0}), "loss");
  ir::Graph g = std::move(b).finish();
  try {
    passes::differentiate(g);
    FAIL();
  } catch (const ir::Error& e) {
    EXPECT_STREQ(e.what(), "autodiff: maximum has no gradient rule, but the loss depends on a param through it");
  }
}

// The whole pretraining loss of a small BERT (dropout on, padding, unequal MLM weights): the
// gradient of every param tensor along a pseudo-random direction, and along one direction that
// moves all params at once, against central differences.
TEST(Gradients, WholeBertTinyLoss) {
  run_config::Config c;
  c.name = "fd";
  c.model.vocab_size = 40;
  c.model.hidden_size = 8;
  c.model.num_hidden_layers = 2;
  c.model.num_attention_heads = 2;
  c.model.intermediate_size = 16;
  c.model.max_position_embeddings = 16;
  c.train.batch_size = 2;
  c.train.seq_len = 6;
  c.train.max_predictions_per_seq = 2;
  const ir::Graph g = frontend::build_bert_pretraining(c.model_settings());
  Env env;
  fill_params(g, env, [](const std::string& name, int64_t i) {
    const double w = 0.4 * wobble(name, i);
    return name.ends_with("LayerNorm.weight") ? 1 + w : w;
  });
  auto ints = [](ir::Shape s, std::vector<int64_t> v) {
    auto t = ir::HostTensor<double>::zeros({DType::I32, std::move(s)});
    t.integer = std::move(v);
    return t;
  };
  env["input_ids"] = ints({2, 6}, {2, 7, 4, 3, 9, 3, 2, 11, 4, 3, 0, 0});
  env["token_type_ids"] = ints({2, 6}, {0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 0, 0});
  env["attention_mask"] = ints({2, 6}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0});
  env["masked_lm_positions"] = ints({2, 2}, {1, 4, 2, 0});
  env["masked_lm_ids"] = ints({2, 2}, {17, 33, 5, 0});
  env["masked_lm_weights"] = ir::HostTensor<double>::zeros({DType::F32, {2, 2}});
  env["masked_lm_weights"].real = {1, 1, 1, 0};
  env["next_sentence_labels"] = ints({2}, {0, 1});
  env["dropout_seed"] = ir::HostTensor<double>::scalar(DType::I64, 99);

  const auto grads = gradients_of(g, env);
  ASSERT_EQ(grads.size(), g.values_of(OpKind::Param).size());
  double all_dot = 0;
  Env moved_plus = env, moved_minus = env;
  for (const auto& [name, grad] : grads) {
    std::vector<double> d(grad.size());
    for (size_t i = 0; i < d.size(); ++i) d[i] = std::cos(2.3 * static_cast<double>(i) + name.size());
    const double dot = std::inner_product(grad.begin(), grad.end(), d.begin(), 0.0);
    const double fd = directional_fd(g, env, name, d, kEps);
    EXPECT_NEAR(dot, fd, kAbsTol * std::sqrt(double(d.size())) + kRelTol * std::abs(dot)) << name;
    all_dot += dot;
    for (size_t i = 0; i < d.size(); ++i) {
      moved_plus[name].real[i] += kEps * d[i];
      moved_minus[name].real[i] -= kEps * d[i];
    }
  }
  const double all_fd = (loss_of(g, moved_plus) - loss_of(g, moved_minus)) / (2 * kEps);
  EXPECT_NEAR(all_dot, all_fd, 1e-6 + kRelTol * std::abs(all_dot));
  // The padding token's row (pad_token_id 0) gets gradient only through the tied MLM decoder.
  EXPECT_NE(grads.at("bert.embeddings.word_embeddings.weight")[0], 0.0);
}

}  // namespace
}  // namespace bertc::testing
