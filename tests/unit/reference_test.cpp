// Unit tests for the reference executor: each op family against values worked out by hand or by
// an independent naive loop.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/builder.h"
#include "ir/out_of_memory.h"
#include "ir/philox.h"
#include "reference/executor.h"

namespace bertc::reference {
namespace {

using ir::Builder;
using ir::Tensor;
using ir::DType;

HostTensor<double> real(ir::Shape shape, std::vector<double> values, DType dtype = DType::F32) {
  HostTensor<double> t = HostTensor<double>::zeros({dtype, std::move(shape)});
  t.real = std::move(values);
  return t;
}
HostTensor<double> ints(ir::Shape shape, std::vector<int64_t> values, DType dtype = DType::I32) {
  HostTensor<double> t = HostTensor<double>::zeros({dtype, std::move(shape)});
  t.integer = std::move(values);
  return t;
}

// Builds with `make`, runs in double on `env`, returns the first output's values.
std::vector<double> run1(const std::function<Tensor(Builder&)>& make, Environment<double> env) {
  Builder b("t");
  b.output(make(b), "out");
  ir::Graph g = std::move(b).finish();
  return Executor<double>(g).run(env).outputs.at(0).real;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-12) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

TEST(Reference, BroadcastingArithmetic) {
  auto out = run1([](Builder& b) { return b.input("a", DType::F32, {2, 3}) + b.input("b", DType::F32, {3}); },
                  {{"a", real({2, 3}, {1, 2, 3, 4, 5, 6})}, {"b", real({3}, {10, 20, 30})}});
  expect_near(out, {11, 22, 33, 14, 25, 36});
  out = run1([](Builder& b) { return b.input("a", DType::F32, {2, 1}) * b.input("b", DType::F32, {1, 3}); },
             {{"a", real({2, 1}, {2, 3})}, {"b", real({1, 3}, {1, 10, 100})}});
  expect_near(out, {2, 20, 200, 3, 30, 300});
}

TEST(Reference, MatmulAgainstNaiveLoopsWithTransposesAndBatchBroadcast) {
  // a: [2,1,3,4] read transposed as [.., 4, 3]; b: [5,4,2] read as-is: out [2,5,3,2]... with
  // transpose_a the contraction is over a's dim 2 (size 3), so use a [2,1,4,3].
  const ir::Shape sa{2, 1, 4, 3}, sb{5, 4, 2};
  std::vector<double> va(24), vb(40);
  for (size_t i = 0; i < va.size(); ++i) va[i] = std::sin(double(i));
  for (size_t i = 0; i < vb.size(); ++i) vb[i] = std::cos(double(i));
  auto out = run1([&](Builder& b) { return b.matmul(b.input("a", DType::F32, sa), b.input("b", DType::F32, sb), true); },
                  {{"a", real(sa, va)}, {"b", real(sb, vb)}});
  ASSERT_EQ(out.size(), 2u * 5 * 3 * 2);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 5; ++j)
      for (int m = 0; m < 3; ++m)
        for (int n = 0; n < 2; ++n) {
          double want = 0;
          for (int k = 0; k < 4; ++k) want += va[i * 12 + k * 3 + m] * vb[j * 8 + k * 2 + n];
          EXPECT_NEAR(out[((i * 5 + j) * 3 + m) * 2 + n], want, 1e-12);
        }
}

TEST(Reference, Reductions) {
  const ir::Shape s{2, 2, 3};
  const std::vector<double> v{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  auto x = [&](Builder& b) { return b.input("x", DType::F32, s); };
  expect_near(run1([&](Builder& b) { return b.reduce_sum(x(b), {0, 2}, true); }, {{"x", real(s, v)}}),
              {1 + 2 + 3 + 7 + 8 + 9, 4 + 5 + 6 + 10 + 11 + 12});
  expect_near(run1([&](Builder& b) { return b.reduce_max(x(b), {1}); }, {{"x", real(s, v)}}), {4, 5, 6, 10, 11, 12});
  expect_near(run1([&](Builder& b) { return b.reduce_mean(x(b), {2}); }, {{"x", real(s, v)}}), {2, 5, 8, 11});
}

TEST(Reference, LayoutOps) {
  const ir::Shape s{2, 3};
  const std::vector<double> v{1, 2, 3, 4, 5, 6};
  auto x = [&](Builder& b) { return b.input("x", DType::F32, s); };
  expect_near(run1([&](Builder& b) { return b.permute(x(b), {1, 0}); }, {{"x", real(s, v)}}), {1, 4, 2, 5, 3, 6});
  expect_near(run1([&](Builder& b) { return b.slice(x(b), 1, 1, 3); }, {{"x", real(s, v)}}), {2, 3, 5, 6});
  expect_near(run1([&](Builder& b) { return b.op(ir::OpKind::Pad, {b.slice(x(b), 1, 1, 2)},
                                                {{"axis", int64_t{1}}, {"before", int64_t{1}}, {"after", int64_t{1}}}); },
                   {{"x", real(s, v)}}),
              {0, 2, 0, 0, 5, 0});
  expect_near(run1([&](Builder& b) {
                Tensor in = x(b);
                return b.concat({in, b.slice(in, 1, 0, 1)}, 1);
              }, {{"x", real(s, v)}}),
              {1, 2, 3, 1, 4, 5, 6, 4});
  expect_near(run1([&](Builder& b) { return b.broadcast(b.slice(x(b), 0, 1, 2), {2, 3}); }, {{"x", real(s, v)}}),
              {4, 5, 6, 4, 5, 6});
}

TEST(Reference, GatherAndScatterAdd) {
  const ir::Shape table{4, 2};
  const std::vector<double> t{0, 1, 10, 11, 20, 21, 30, 31};
  Environment<double> env{{"t", real(table, t)}, {"i", ints({3}, {3, 0, 3})}};
  auto gathered = run1([&](Builder& b) { return b.gather(b.input("t", DType::F32, table), b.input("i", DType::I32, {3})); }, env);
  expect_near(gathered, {30, 31, 0, 1, 30, 31});
  // Row 3 is named twice, so it receives both updates; padding_idx 0 receives nothing.
  env = {{"u", real({3, 2}, {1, 2, 3, 4, 5, 6})}, {"i", ints({3}, {3, 0, 3})}};
  auto scattered = run1([&](Builder& b) {
    const ir::Tensor i = b.input("i", DType::I32, {3});
    const ir::Tensor order = b.op(ir::OpKind::ArgSort, {i}, {{"rows", int64_t{4}}});
    return b.op(ir::OpKind::ScatterAdd, {b.input("u", DType::F32, {3, 2}), i, order}, {{"padding_idx", int64_t{0}}},
                ir::TensorType{DType::F32, table});
  }, env);
  expect_near(scattered, {0, 0, 0, 0, 0, 0, 6, 8});
  // Argsort: positions by (batch, index), ties in position order; per batch row with batch_dims 1.
  env = {{"i", ints({2, 4}, {3, 0, 3, 1, 0, 2, 0, 2})}};
  const auto order = [&](int64_t batch_dims) {
    Builder b("t");
    b.output(b.op(ir::OpKind::ArgSort, {b.input("i", DType::I32, {2, 4})}, {{"rows", int64_t{4}}, {"batch_dims", batch_dims}}),
             "out");
    ir::Graph g = std::move(b).finish();
    return Executor<double>(g).run(env).outputs.at(0);
  };
  EXPECT_EQ(order(0).integer, (std::vector<int64_t>{1, 4, 6, 3, 5, 7, 0, 2}));
  EXPECT_EQ(order(1).integer, (std::vector<int64_t>{1, 3, 0, 2, 4, 6, 5, 7}));
  // Batched gather: per batch row, positions into that row's sequence.
  env = {{"x", real({2, 3, 1}, {1, 2, 3, 4, 5, 6})}, {"p", ints({2, 2}, {2, 0, 1, 1})}};
  expect_near(run1([&](Builder& b) { return b.gather(b.input("x", DType::F32, {2, 3, 1}), b.input("p", DType::I32, {2, 2}), 1); }, env),
              {3, 1, 5, 5});
}

TEST(Reference, OutOfRangeIndexIsAnErrorNamingTheOp) {
  Builder b("t");
  b.output(b.gather(b.input("t", DType::F32, {4, 2}), b.input("i", DType::I32, {2})), "out");
  ir::Graph g = std::move(b).finish();
  Environment<double> env{{"t", HostTensor<double>::zeros({DType::F32, {4, 2}})}, {"i", ints({2}, {1, 4})}};
  try {
    Executor<double>(g).run(env);
    FAIL();
  } catch (const EvalError& e) {
    EXPECT_STREQ(e.what(), "op %out = gather: index 4 at position 1 is outside [0, 4)");
  }
}

// A value too large for the host's memory (4 TiB): the error names the op and the size (the
// command that ran adds what needs less), and is not wrapped as an evaluation error of the op.
TEST(Reference, OutOfMemoryNamesTheOpAndTheSize) {
  Builder b("t");
  const int64_t huge = int64_t{1} << 40;
  b.output(b.broadcast(b.input("x", DType::F32, {1}), {huge}), "big");
  ir::Graph g = std::move(b).finish();
  Environment<float> env{{"x", HostTensor<float>::zeros({DType::F32, {1}})}};
  try {
    Executor<float>(g).run(env);
    FAIL() << "a 4 TiB value was allocated";
  } catch (const ir::OutOfMemory& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("out of host memory allocating 4096.0 GiB for the results of op %big = broadcast of the t graph"),
              std::string::npos)
        << m;
  }
}

TEST(Reference, SoftmaxAndLayerNorm) {
  expect_near(run1([](Builder& b) { return b.softmax(b.input("x", DType::F32, {1, 2})); },
                   {{"x", real({1, 2}, {0, std::log(2.0)})}}),
              {1.0 / 3, 2.0 / 3});
  // Row [1,2,3,4]: mean 2.5, biased variance 1.25.
  const double rstd = 1 / std::sqrt(1.25 + 1e-12);
  auto ln = run1([](Builder& b) {
    return b.layer_norm(b.input("x", DType::F32, {1, 4}), b.input("w", DType::F32, {4}), b.input("b", DType::F32, {4}), 1e-12);
  }, {{"x", real({1, 4}, {1, 2, 3, 4})}, {"w", real({4}, {1, 1, 2, 2})}, {"b", real({4}, {0, 0, 0, 1})}});
  expect_near(ln, {-1.5 * rstd, -0.5 * rstd, 2 * 0.5 * rstd, 2 * 1.5 * rstd + 1}, 1e-9);
}

TEST(Reference, DropoutDrawsThePhiloxMask) {
  const int64_t n = 1000;
  std::vector<double> ones(n, 1.0);
  Builder b("t");
  Tensor x = b.input("x", DType::F32, {n});
  b.output(b.dropout(x, 0.25), "out");
  ir::Graph g = std::move(b).finish();
  Environment<double> env{{"x", real({n}, ones)}, {"dropout_seed", ints({}, {987654321}, DType::I64)}};
  auto out = Executor<double>(g).run(env).outputs.at(0).real;
  const uint32_t threshold = ir::dropout_threshold(0.25);
  for (int64_t i = 0; i < n; ++i)
    EXPECT_EQ(out[i], ir::dropout_keep(987654321, 0, i, threshold) ? 1 / 0.75 : 0.0) << i;
}

TEST(Reference, CrossEntropyMeanWeightsAndIgnoredRows) {
  // Row 0: logits (0, 0), label 0: ln 2. Row 1: (ln 3, 0), label 1: ln(3 + 1) - 0 = ln 4.
  auto ce = [](std::optional<std::vector<double>> weights, int64_t ignore, std::vector<int64_t> labels) {
    Builder b("t");
    Tensor logits = b.input("l", DType::F32, {2, 2});
    Tensor y = b.input("y", DType::I32, {2});
    std::optional<Tensor> w;
    if (weights) w = b.input("w", DType::F32, {2});
    b.output(b.cross_entropy(logits, y, w, ignore), "out");
    ir::Graph g = std::move(b).finish();
    Environment<double> env{{"l", real({2, 2}, {0, 0, std::log(3.0), 0})}, {"y", ints({2}, labels)}};
    if (weights) env["w"] = real({2}, *weights);
    return Executor<double>(g).run(env).outputs.at(0).real.at(0);
  };
  EXPECT_NEAR(ce(std::nullopt, -100, {0, 1}), (std::log(2.0) + std::log(4.0)) / 2, 1e-12);
  EXPECT_NEAR(ce(std::vector<double>{1, 0}, -100, {0, 1}), std::log(2.0), 1e-12);
  EXPECT_NEAR(ce(std::nullopt, 1, {0, 1}), std::log(2.0), 1e-12);  // row 1's label is ignore_index
  EXPECT_EQ(ce(std::vector<double>{0, 0}, -100, {0, 1}), 0.0);     // nothing counts
  EXPECT_THROW(ce(std::nullopt, -100, {0, 2}), EvalError);         // label 2 of 2 classes
}

// One AdamW step worked by hand: m' = 0.05, v' = 0.00025, m^ = 0.5, v^ = 0.25,
// u = 0.5 / (0.5 + 1e-8) + 0.01 * 1, p' = 1 - 0.1 * u.
TEST(Reference, AdamwAndLambStep) {
  auto step = [](ir::OpKind kind, std::vector<double> p, std::vector<double> g) {
    const ir::Shape s{static_cast<int64_t>(p.size())};
    Builder b("t");
    Tensor param = b.param("p", s), grad = b.input("g", DType::F32, s);
    Tensor m = b.state("m", {DType::F32, s});
    Tensor v = b.state("v", {DType::F32, s});
    Tensor lr = b.input("lr", DType::F32, {}), t = b.input("t", DType::I64, {});
    auto out = b.ops(kind, {param, grad, m, v, lr, t},
                     {{"beta1", 0.9}, {"beta2", 0.999}, {"eps", 1e-8}, {"weight_decay", 0.01}});
    b.output(out[0], "p1");
    ir::Graph g2 = std::move(b).finish();
    Environment<double> env{{"p", real(s, p)}, {"g", real(s, g)}, {"m", HostTensor<double>::zeros({DType::F32, s})},
                            {"v", HostTensor<double>::zeros({DType::F32, s})}, {"lr", real({}, {0.1})},
                            {"t", ints({}, {1}, DType::I64)}};
    return Executor<double>(g2).run(env).outputs.at(0).real;
  };
  const double u = 0.5 / (0.5 + 1e-8) + 0.01;
  expect_near(step(ir::OpKind::Adamw, {1.0}, {0.5}), {1 - 0.1 * u}, 1e-12);
  // LAMB on p = (3, 4), g = (1, -1): u_i = sign(g_i) * ~1 + 0.01 p_i; trust = |p| / |u| = 5 / |u|.
  const double u0 = 1 / (1 + 1e-8) + 0.03, u1 = -1 / (1 + 1e-8) + 0.04;
  const double trust = 5 / std::sqrt(u0 * u0 + u1 * u1);
  expect_near(step(ir::OpKind::Lamb, {3, 4}, {1, -1}), {3 - 0.1 * trust * u0, 4 - 0.1 * trust * u1}, 1e-12);
}

TEST(Reference, UpdatesWriteBackAfterTheStepAndSourcesAreChecked) {
  Builder b("t");
  Tensor w = b.param("w", {2});
  Tensor doubled = w * 2.0;
  b.update(w, doubled);
  b.output(w + 0.0, "seen");  // reads the old w even though the update comes first in op order
  ir::Graph g = std::move(b).finish();
  Environment<double> env{{"w", real({2}, {1, 2})}};
  auto result = Executor<double>(g).run(env);
  expect_near(result.outputs[0].real, {1, 2});
  expect_near(env["w"].real, {2, 4});
  Environment<double> wrong{{"w", real({3}, {1, 2, 3})}};
  try {
    Executor<double>(g).run(wrong);
    FAIL();
  } catch (const EvalError& e) {
    EXPECT_STREQ(e.what(), "op %w = param: param %w is f32[2], but the value given is f32[3]");
  }
  Environment<double> none;
  EXPECT_THROW(Executor<double>(g).run(none), EvalError);
}

// The fused attention op computes exactly what matmul, scale, bias, softmax, dropout and matmul
// compute as separate ops: same operations in the same order, same dropout mask.
TEST(Reference, AttentionEqualsItsUnfusedOps) {
  const ir::Shape sq{2, 2, 3, 4}, sk{2, 2, 5, 4}, sb{2, 1, 1, 5};
  Environment<double> env{{"dropout_seed", ints({}, {4242}, DType::I64)}};
  auto fill = [&](const char* name, const ir::Shape& s, double f) {
    auto t = HostTensor<double>::zeros({DType::F32, s});
    for (int64_t i = 0; i < t.numel(); ++i) t.real[i] = std::sin(f * double(i) + 1);
    env[name] = t;
  };
  fill("q", sq, 0.7);
  fill("k", sk, 1.3);
  fill("v", sk, 0.4);
  fill("bias", sb, 2.1);
  auto build = [&](bool fused) {
    Builder b("t");
    Tensor q = b.input("q", DType::F32, sq), k = b.input("k", DType::F32, sk), v = b.input("v", DType::F32, sk);
    Tensor bias = b.input("bias", DType::F32, sb), seed = b.input("dropout_seed", DType::I64, {});
    Tensor out;
    if (fused) {
      out = b.ops(ir::OpKind::Attention, {q, k, v, bias, seed}, {{"scale", 0.5}, {"p", 0.3}, {"offset", int64_t{0}}})[0];
    } else {
      Tensor probs = b.softmax(b.matmul(q, k, false, true) * 0.5 + bias);
      out = b.matmul(b.dropout(probs, 0.3), v);  // the builder's first dropout gets offset 0
    }
    b.output(out, "out");
    return std::move(b).finish();
  };
  const ir::Graph fused = build(true), unfused = build(false);
  EXPECT_EQ(Executor<double>(fused).run(env).outputs[0].real, Executor<double>(unfused).run(env).outputs[0].real);
}

// attention_qkv over a packed [B,S,3,h,d] projection is attention of its q, k, v permuted to
// [B,h,S,d], with the output permuted back to [B,S,h,d]: the same values, bit for bit, dropout
// included (its mask is indexed over [B,h,S,S] in both).
TEST(Reference, PackedAttentionEqualsAttentionOfItsPermutedHeads) {
  const ir::Shape sqkv{2, 5, 3, 2, 4}, sb{2, 1, 1, 5};
  Environment<double> env{{"dropout_seed", ints({}, {4242}, DType::I64)}};
  auto t = HostTensor<double>::zeros({DType::F32, sqkv});
  for (int64_t i = 0; i < t.numel(); ++i) t.real[i] = std::sin(0.37 * double(i) + 1);
  env["qkv"] = t;
  auto bias = HostTensor<double>::zeros({DType::F32, sb});
  for (int64_t i = 0; i < bias.numel(); ++i) bias.real[i] = i % 4 == 3 ? -10000.0 : 0.1 * double(i);
  env["bias"] = bias;
  auto build = [&](bool packed) {
    Builder b("t");
    Tensor qkv = b.input("qkv", DType::F32, sqkv), bias = b.input("bias", DType::F32, sb);
    Tensor seed = b.input("dropout_seed", DType::I64, {});
    const std::vector<ir::NamedAttr> attrs{{"scale", 0.5}, {"p", 0.3}, {"offset", int64_t{7}}};
    Tensor out;
    if (packed) {
      out = b.ops(ir::OpKind::AttentionQkv, {qkv, bias, seed}, attrs)[0];
    } else {
      Tensor heads = b.permute(qkv, {2, 0, 3, 1, 4});  // [3,B,h,S,d]
      auto head = [&](int64_t i) { return b.reshape(b.slice(heads, 0, i, i + 1), {2, 2, 5, 4}); };
      out = b.permute(b.ops(ir::OpKind::Attention, {head(0), head(1), head(2), bias, seed}, attrs)[0], {0, 2, 1, 3});
    }
    b.output(out, "out");
    return std::move(b).finish();
  };
  const auto packed = Executor<double>(build(true)).run(env).outputs[0], separate = Executor<double>(build(false)).run(env).outputs[0];
  EXPECT_EQ(packed.type, separate.type);
  EXPECT_EQ(packed.real, separate.real);
}

TEST(Reference, FusedOpRunsItsRegion) {
  ir::Graph body("region");
  const ir::OpId in0 = body.add_op(ir::OpKind::Input, {}, {}, {{DType::F32, {3}}});
  body.name_value(body.op(in0).result(), "in0");
  const ir::OpId n = body.add_op(ir::OpKind::Neg, {body.op(in0).result()}, {}, {{DType::F32, {3}}});
  const ir::OpId e = body.add_op(ir::OpKind::Exp, {body.op(n).result()}, {}, {{DType::F32, {3}}});
  body.add_output(body.op(n).result());
  body.add_output(body.op(e).result());
  ir::Graph g("g");
  const ir::OpId x = g.add_op(ir::OpKind::Input, {}, {}, {{DType::F32, {3}}});
  g.name_value(g.op(x).result(), "x");
  const ir::OpId f = g.add_op(ir::OpKind::Fused, {g.op(x).result()}, {ir::AttrValue(std::string("pointwise")),
                              ir::AttrValue(int64_t{0}), ir::AttrValue(int64_t{0}), ir::AttrValue(0.0)},
                              {{DType::F32, {3}}, {DType::F32, {3}}});
  g.set_region(f, ir::Region(std::move(body)));
  g.add_output(g.op(f).results[1]);
  Environment<double> env{{"x", real({3}, {0, 1, -1})}};
  expect_near(Executor<double>(g).run(env).outputs[0].real, {1, std::exp(-1.0), std::exp(1.0)});
}

TEST(Reference, WhereAndAllFinite) {
  expect_near(run1([](Builder& b) {
                return b.op(ir::OpKind::Where, {b.input("c", DType::I32, {3}), b.input("a", DType::F32, {3}), b.constant(9.0)});
              }, {{"c", ints({3}, {1, 0, 2})}, {"a", real({3}, {1, 2, 3})}}),
              {1, 9, 3});
  auto finite = [](double x) {
    return run1([](Builder& b) { return b.op(ir::OpKind::AllFinite, {b.input("a", DType::F32, {2}), b.input("b", DType::F32, {1})}); },
                {{"a", real({2}, {1, 2})}, {"b", real({1}, {x})}})[0];
  };
  EXPECT_EQ(finite(3.0), 1.0);
  EXPECT_EQ(finite(INFINITY), 0.0);
  EXPECT_EQ(finite(NAN), 0.0);
}

TEST(Reference, SixteenBitStorageRounds) {
  auto cast = [](DType to, double x) {
    return run1([&](Builder& b) { return b.cast(b.cast(b.input("x", DType::F32, {1}), to), DType::F32); },
                {{"x", real({1}, {x})}})[0];
  };
  EXPECT_EQ(cast(DType::F16, 1.0 + 1.0 / 4096), 1.0);           // below half an fp16 ulp (2^-10)
  EXPECT_EQ(cast(DType::F16, 1.0 + 3.0 / 2048), 1.0 + 1.0 / 512);  // 1.5 ulp rounds to even (2 ulp)
  EXPECT_EQ(cast(DType::F16, 70000.0), INFINITY);               // beyond fp16's range
  EXPECT_EQ(cast(DType::BF16, 1.0 + 1.0 / 256), 1.0);           // bf16 keeps 7 mantissa bits
  EXPECT_EQ(cast(DType::BF16, 3.0e38), 3.00405527047391e38);   // nearest bf16 (0x7f62), no overflow
}

}  // namespace
}  // namespace bertc::reference
