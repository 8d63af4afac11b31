// Unit tests for the verifier on graphs built directly (as passes build them), where the parser
// cannot have caught anything.
#include <gtest/gtest.h>

#include "ir/verifier.h"

namespace bertc::ir {
namespace {

TensorType f32(Shape s) { return {DType::F32, std::move(s)}; }

bool any_contains(const std::vector<Diagnostic>& diags, const std::string& text) {
  for (const auto& d : diags)
    if (d.message.find(text) != std::string::npos) return true;
  return false;
}

TEST(Verifier, AcceptsAWellFormedGraph) {
  Graph g("g");
  OpId x = g.add_op(OpKind::Input, {}, {}, {f32({2, 3})});
  OpId y = g.add_op(OpKind::Tanh, {g.op(x).result()}, {}, {f32({2, 3})});
  g.add_output(g.op(y).result());
  EXPECT_TRUE(verify(g).empty());
  EXPECT_NO_THROW(verify_or_throw(g));
}

TEST(Verifier, UseBeforeDefinition) {
  Graph g("g");
  // Op 0 uses value 1, which op 1 defines afterwards: not topological order.
  g.add_op(OpKind::Neg, {1}, {}, {f32({2})});
  g.add_op(OpKind::Input, {}, {}, {f32({2})});
  g.add_output(0);
  auto diags = verify(g);
  EXPECT_TRUE(any_contains(diags, "operand 0 'x' is used before it is defined")) << diags[0].message;
}

TEST(Verifier, OperandOutOfRangeIsReportedNotCrashed) {
  Graph g("g");
  g.add_op(OpKind::Neg, {77}, {}, {f32({2})});
  g.add_output(0);
  EXPECT_TRUE(any_contains(verify(g), "used before it is defined"));
}

TEST(Verifier, AttributeSchemaMismatch) {
  Graph g("g");
  OpId x = g.add_op(OpKind::Input, {}, {}, {f32({2, 2})});
  // Two attribute values expected (transpose_a, transpose_b); one given, of the wrong kind.
  g.add_op(OpKind::Matmul, {g.op(x).result(), g.op(x).result()}, {AttrValue(int64_t{1})}, {f32({2, 2})});
  g.add_op(OpKind::Matmul, {g.op(x).result(), g.op(x).result()}, {AttrValue(int64_t{1}), AttrValue(true)},
           {f32({2, 2})});
  g.add_output(1);
  auto diags = verify(g);
  ASSERT_EQ(diags.size(), 2u);
  EXPECT_NE(diags[0].message.find("has 1 attribute values, its schema 2"), std::string::npos);
  EXPECT_NE(diags[1].message.find("attribute 'transpose_a' expects a bool, found 1"), std::string::npos);
}

TEST(Verifier, MissingOutputsAndWrongResultCount) {
  Graph g("g");
  g.add_op(OpKind::Input, {}, {}, {f32({2}), f32({2})});
  auto diags = verify(g);
  EXPECT_TRUE(any_contains(diags, "needs exactly one declared result type"));
  EXPECT_TRUE(any_contains(diags, "graph has no outputs"));
}

TEST(Verifier, ReportsEveryProblemAndThrowsTheFirst) {
  Graph g("g");
  OpId x = g.add_op(OpKind::Input, {}, {}, {f32({2, 3})});
  g.add_op(OpKind::Exp, {g.op(x).result()}, {}, {f32({3, 2})});
  g.add_op(OpKind::Log, {g.op(x).result()}, {}, {f32({2})});
  g.add_output(1);
  EXPECT_EQ(verify(g).size(), 2u);
  try {
    verify_or_throw(g);
    FAIL();
  } catch (const VerifyError& e) {
    EXPECT_EQ(e.diagnostics().size(), 2u);
    EXPECT_NE(std::string(e.what()).find("op %1 = exp: result %1 has type f32[3,2], expected f32[2,3]"),
              std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace bertc::ir
