// Unit tests for the DSL builder: ops are checked as they are made, scopes name parameters.
#include <gtest/gtest.h>

#include "ir/builder.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace bertc::ir {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ir::Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Builder, BuildsAVerifiedGraph) {
  Builder b("mlp");
  Tensor x = b.input("x", DType::F32, {4, 8});
  Tensor w = b.param("w", {16, 8});
  Tensor y = gelu(b.matmul(x, w, false, true)) * 2.0;
  EXPECT_EQ(y.shape(), (Shape{4, 16}));
  b.output(b.reduce_mean(y, {-1}), "loss_like");
  ir::Graph g = std::move(b).finish();
  EXPECT_EQ(ir::print(g),
            "graph @mlp {\n"
            "  %x = input : f32[4,8]\n"
            "  %w = param : f32[16,8]\n"
            "  %0 = matmul(%x, %w) {transpose_b = true} : f32[4,16]\n"
            "  %1 = gelu(%0) : f32[4,16]\n"
            "  %2 = constant {value = 2} : f32[]\n"
            "  %3 = mul(%1, %2) : f32[4,16]\n"
            "  %loss_like = reduce_mean(%3) {axes = [1]} : f32[4]\n"
            "  return %loss_like\n"
            "}\n");
}

TEST(Builder, ShapeMistakesStopAtTheOpWithContext) {
  Builder b("g");
  Tensor x = b.input("x", DType::F32, {4, 8});
  auto scope = b.scope("encoder");
  Tensor w = b.param("w", {16, 9});
  const std::string msg = error_of([&] { b.matmul(x, w, false, true); });
  EXPECT_EQ(msg, "building matmul in encoder: operand 1 'rhs' (%encoder.w : f32[16,9]): expected contraction size 8 "
                 "(from lhs [4,8]), found 9 in [16,9] transposed");
  EXPECT_NE(error_of([&] { b.reshape(x, {5, 5}); }).find("cannot reshape f32[4,8] (32 elements) to [5,5]"),
            std::string::npos);
  EXPECT_NE(error_of([&] { b.slice(x, 2, 0, 1); }).find("axis 2 is out of range for f32[4,8]"), std::string::npos);
  EXPECT_NE(error_of([&] { b.op(ir::OpKind::Neg, {x, x}); }).find("expected operands (x), found 2"), std::string::npos);
}

TEST(Builder, ScopesPrefixParameterNames) {
  Builder b("g");
  {
    auto outer = b.scope("bert.encoder.layer.3");
    auto inner = b.scope("attention");
    b.param("self.query.weight", {4, 4});
  }
  b.param("cls.bias", {4});
  EXPECT_TRUE(b.graph().find("bert.encoder.layer.3.attention.self.query.weight").has_value());
  EXPECT_TRUE(b.graph().find("cls.bias").has_value());
  EXPECT_NE(error_of([&] { b.param("cls.bias", {4}); }).find("already used"), std::string::npos);
}

TEST(Builder, DropoutSharesOneSeedAndNumbersOffsets) {
  Builder b("g");
  Tensor x = b.input("x", DType::F32, {4});
  Tensor a = b.dropout(x, 0.1);
  Tensor c = b.dropout(a, 0.2);
  EXPECT_EQ(b.dropout(c, 0.0).id(), c.id());  // p = 0 adds no op
  const ir::Graph& g = b.graph();
  const ir::Op& first = g.producer(a.id());
  const ir::Op& second = g.producer(c.id());
  EXPECT_EQ(first.operands[1], second.operands[1]);
  EXPECT_EQ(g.value(first.operands[1]).name, "dropout_seed");
  EXPECT_EQ(first.attr<int64_t>("offset"), 0);
  EXPECT_EQ(second.attr<int64_t>("offset"), 1);
  EXPECT_EQ(second.attr<double>("p"), 0.2);
}

TEST(Builder, NoOpHelpersAddNothing) {
  Builder b("g");
  Tensor x = b.input("x", DType::F32, {4, 2});
  const size_t ops = b.graph().ops().size();
  EXPECT_EQ(b.reshape(x, {4, 2}).id(), x.id());
  EXPECT_EQ(b.cast(x, DType::F32).id(), x.id());
  EXPECT_EQ(b.graph().ops().size(), ops);
}

TEST(Builder, NegativeAxesAreNormalised) {
  Builder b("g");
  Tensor x = b.input("x", DType::F32, {2, 3, 4});
  Tensor s = b.reduce_sum(x, {-1, 0});
  EXPECT_EQ(b.graph().producer(s.id()).attr<std::vector<int64_t>>("axes"), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(x.dim(-1), 4);
  EXPECT_EQ(b.slice(x, -2, 1, 3).shape(), (Shape{2, 2, 4}));
}

TEST(Builder, FinishRefusesAGraphWithoutOutputs) {
  Builder b("g");
  b.input("x", DType::F32, {2});
  EXPECT_THROW(std::move(b).finish(), ir::VerifyError);
}

}  // namespace
}  // namespace bertc::ir
