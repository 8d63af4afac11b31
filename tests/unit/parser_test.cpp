// Unit tests for the IR text form: what parses, how it prints back, where errors point.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace bertc::ir {
namespace {

constexpr const char* kSmall = R"(graph @small {
  %x = input : f32[2,4]
  %w = param : f32[3,4]
  %0 = matmul(%x, %w) {transpose_b = true} : f32[2,3]
  %1 = gelu(%0) : f32[2,3]
  %y = reduce_sum(%1) {axes = [1]} : f32[2]
  return %y
}
)";

TEST(Parser, ReadsOpsOperandsAttributesAndTypes) {
  Graph g = parse(kSmall);
  EXPECT_EQ(g.name(), "small");
  ASSERT_EQ(g.ops().size(), 5u);
  const Op& mm = g.ops()[2];
  EXPECT_EQ(mm.kind, OpKind::Matmul);
  EXPECT_EQ(mm.operands, (std::vector<ValueId>{*g.find("x"), *g.find("w")}));
  EXPECT_FALSE(mm.attr<bool>("transpose_a"));
  EXPECT_TRUE(mm.attr<bool>("transpose_b"));
  EXPECT_EQ(g.value(mm.result()).type, (TensorType{DType::F32, {2, 3}}));
  EXPECT_EQ(g.ops()[4].attr<std::vector<int64_t>>("axes"), std::vector<int64_t>{1});
  EXPECT_EQ(g.outputs(), std::vector<ValueId>{*g.find("y")});
  EXPECT_TRUE(verify(g).empty());
}

TEST(Parser, PrintsBackExactly) { EXPECT_EQ(print(parse(kSmall)), kSmall); }

TEST(Parser, RenumbersUnnamedValuesAndKeepsComments) {
  Graph g = parse(R"(// leading comment
graph @g {
  %x = input : f32[2]   // trailing comment
  %41 = neg(%x) : f32[2]
  %7 = exp(%41) : f32[2]
  return %7, %41
})");
  EXPECT_EQ(print(g), "graph @g {\n  %x = input : f32[2]\n  %0 = neg(%x) : f32[2]\n  %1 = exp(%0) : f32[2]\n"
                      "  return %1, %0\n}\n");
}

TEST(Parser, FloatAttributesRoundTripBitExactly) {
  for (double v : {1e-12, 0.1, -10000.0, 1.0 / 3.0, 6.02214076e23, -0.0}) {
    Graph g("g");
    g.add_op(OpKind::Constant, {}, {AttrValue(v)}, {{DType::F32, {}}});
    g.add_output(0);
    const double back = parse(print(g)).ops()[0].attr<double>("value");
    EXPECT_EQ(std::signbit(back), std::signbit(v));
    EXPECT_EQ(back, v) << print(g);
  }
  Graph g = parse("graph @g {\n  %c = constant {value = nan} : f32[]\n  return %c\n}\n");
  EXPECT_TRUE(std::isnan(g.ops()[0].attr<double>("value")));
}

// Parses `text`, expecting an error at line:column whose message contains `message`.
void expect_error(const std::string& text, uint32_t line, uint32_t column, const std::string& message) {
  try {
    parse(text);
    ADD_FAILURE() << "parsed without error:\n" << text;
  } catch (const Error& e) {
    EXPECT_EQ(e.loc().line, line) << e.what();
    EXPECT_EQ(e.loc().column, column) << e.what();
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST(Parser, ErrorsPointAtTheProblem) {
  expect_error("graph @g {\n  %x = input : f32[2]\n  %y = neg(%z) : f32[2]\n  return %y\n}", 3, 12,
               "use of undefined value %z");
  expect_error("graph @g {\n  %x = input : f32[2]\n  return %x\n", 4, 1, "expected '}'");
  expect_error("grap @g {}", 1, 1, "expected 'graph'");
  expect_error("graph @g {\n  %x = input : f32[2]\n  %y = neg(%x) {p = 1} : f32[2]\n  return %y\n}", 3, 17,
               "neg has no attribute 'p' (it takes: none)");
  expect_error("graph @g {\n  %x = input : f32[2]\n  %y = neg(%x : f32[2]\n  return %y\n}", 3, 15, "expected ')'");
  expect_error("graph @g {\n  %x = input : f32[99999999999999999999]\n  return %x\n}", 2, 20, "expected an integer");
  expect_error("graph @g {\n  %1.5 = input : f32[2]\n  return %1.5\n}", 2, 3, "not a valid value name");
  expect_error("graph @g {\n  %c = constant {value = -x} : f32[]\n  return %c\n}", 2, 27, "expected 'inf' after '-'");
}

TEST(Parser, ParseDoesNotVerifyButVerifierFindsTheProblem) {
  Graph g = parse("graph @g {\n  %x = input : f32[2]\n  %y = neg(%x) : f32[3]\n  return %y\n}");
  auto diags = verify(g);
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags[0].loc.line, 3u);
  EXPECT_NE(diags[0].message.find("expected f32[2]"), std::string::npos) << diags[0].message;
}

}  // namespace
}  // namespace bertc::ir
