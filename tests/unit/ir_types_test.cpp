// Unit tests for dtypes, tensor types, attributes and the op table.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "ir/error.h"
#include "ir/graph.h"
#include "ir/op_info.h"
#include "ir/parser.h"

namespace bertc::ir {
namespace {

TEST(DType, NamesRoundTripAndSizes) {
  for (DType t : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32, DType::U8, DType::Bool})
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
  EXPECT_EQ(dtype_bytes(DType::BF16), 2u);
  EXPECT_EQ(dtype_bytes(DType::I64), 8u);
  EXPECT_TRUE(is_float(DType::BF16));
  EXPECT_FALSE(is_float(DType::I32));
  EXPECT_TRUE(is_integer(DType::U8));
  EXPECT_FALSE(is_integer(DType::Bool));
  EXPECT_FALSE(dtype_from_name("float32").has_value());
}

TEST(TensorType, ElementCountAndBytes) {
  TensorType t{DType::F16, {8, 128, 768}};
  EXPECT_EQ(t.numel(), 8 * 128 * 768);
  EXPECT_EQ(t.bytes(), 2 * 8 * 128 * 768);
  EXPECT_EQ(TensorType({DType::F32, {}}).numel(), 1);  // a scalar
  EXPECT_EQ(TensorType({DType::F32, {3, 0}}).numel(), 0);
  EXPECT_EQ(to_string(t), "f16[8,128,768]");
}

TEST(TensorType, RejectsNegativeAndOverflowingShapes) {
  EXPECT_THROW(checked_numel({2, -1}), Error);
  // 2^31 * 2^31 * 4 would wrap a 64-bit product without the check.
  EXPECT_THROW(checked_numel({int64_t{1} << 31, int64_t{1} << 31, 4}), Error);
  EXPECT_EQ(checked_numel({int64_t{1} << 26, int64_t{1} << 26}), int64_t{1} << 52);
}

TEST(Broadcast, FollowsNumPyRules) {
  EXPECT_EQ(broadcast_shapes({8, 1, 1, 128}, {8, 12, 128, 128}), (Shape{8, 12, 128, 128}));
  EXPECT_EQ(broadcast_shapes({768}, {32, 128, 768}), (Shape{32, 128, 768}));
  EXPECT_EQ(broadcast_shapes({}, {2, 3}), (Shape{2, 3}));
  EXPECT_FALSE(broadcast_shapes({3}, {4}).has_value());
  EXPECT_FALSE(broadcast_shapes({2, 3}, {3, 3}).has_value());
  EXPECT_TRUE(broadcasts_to({1, 4}, {3, 4}));
  EXPECT_FALSE(broadcasts_to({3, 4}, {1, 4}));  // broadcasting never shrinks
}

TEST(Attr, TextForms) {
  EXPECT_EQ(format_attr(AttrValue(true)), "true");
  EXPECT_EQ(format_attr(AttrValue(int64_t{-100})), "-100");
  EXPECT_EQ(format_attr(AttrValue(1e-12)), "1e-12");
  EXPECT_EQ(format_attr(AttrValue(0.1)), "0.1");
  EXPECT_EQ(format_attr(AttrValue(std::vector<int64_t>{0, 2, 1, 3})), "[0,2,1,3]");
}

TEST(OpTable, NamesAreUniqueAndLookUpBack) {
  std::set<std::string_view> names;
  for (const OpInfo& info : all_ops()) {
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    EXPECT_EQ(op_kind_from_name(info.name), info.kind);
    EXPECT_EQ(&op_info(info.kind), &info);
    EXPECT_FALSE(info.doc.empty()) << info.name << " needs a one-line doc";
    for (const AttrSpec& spec : info.attrs) {
      if (spec.default_value) {
        EXPECT_EQ(kind_of(*spec.default_value), spec.kind) << info.name << "." << spec.name;
      }
    }
  }
  EXPECT_FALSE(op_kind_from_name("matmull").has_value());
}

TEST(OpTable, OperandSpecsFromTheTable) {
  const OpInfo& ce = op_info(OpKind::CrossEntropy);
  EXPECT_EQ(ce.min_operands(), 2u);
  EXPECT_EQ(ce.max_operands(), 3u);
  EXPECT_EQ(ce.operand_name(2), "weights");
  const OpInfo& concat = op_info(OpKind::Concat);
  EXPECT_EQ(concat.min_operands(), 1u);
  EXPECT_GT(concat.max_operands(), 1000u);
  EXPECT_EQ(concat.operand_name(3), "inputs[3]");
}

TEST(OpTable, CompleteAttrsFillsDefaultsAndRejectsMistakes) {
  const OpInfo& mm = op_info(OpKind::Matmul);
  auto attrs = complete_attrs(mm, std::vector<NamedAttr>{{"transpose_b", true}});
  ASSERT_EQ(attrs.size(), 2u);
  EXPECT_EQ(std::get<bool>(attrs[0]), false);
  EXPECT_EQ(std::get<bool>(attrs[1]), true);
  EXPECT_THROW(complete_attrs(mm, std::vector<NamedAttr>{{"transpose_c", true}}), Error);
  EXPECT_THROW(complete_attrs(mm, std::vector<NamedAttr>{{"transpose_a", int64_t{1}}}), Error);
  EXPECT_THROW(complete_attrs(mm, std::vector<NamedAttr>{{"transpose_a", true}, {"transpose_a", true}}), Error);
  EXPECT_THROW(complete_attrs(op_info(OpKind::Dropout), std::vector<NamedAttr>{{"p", 0.1}}), Error);  // no offset
}

// The lit round-trip test must exercise every op kind, so a new op gets printer/parser coverage.
TEST(OpTable, RoundTripLitTestCoversEveryOp) {
  std::ifstream in(std::string(BERTC_SOURCE_DIR) + "/tests/lit/roundtrip_all_ops.ir");
  ASSERT_TRUE(in);
  std::stringstream text;
  text << in.rdbuf();
  Graph g = parse(text.str());
  std::set<OpKind> seen;
  for (const Op& op : g.ops()) seen.insert(op.kind);
  for (const OpInfo& info : all_ops()) EXPECT_TRUE(seen.count(info.kind)) << info.name << " is not in roundtrip_all_ops.ir";
}

TEST(Graph, NamesAreValidatedAndUnique) {
  Graph g("g");
  OpId a = g.add_op(OpKind::Input, {}, {}, {{DType::F32, {2}}});
  OpId b = g.add_op(OpKind::Input, {}, {}, {{DType::F32, {2}}});
  g.name_value(g.op(a).result(), "bert.x_1");
  EXPECT_EQ(g.find("bert.x_1"), g.op(a).result());
  EXPECT_THROW(g.name_value(g.op(b).result(), "bert.x_1"), Error);
  EXPECT_THROW(g.name_value(g.op(b).result(), "12"), Error);
  EXPECT_THROW(g.name_value(g.op(b).result(), "a-b"), Error);
  EXPECT_FALSE(g.find("nothing").has_value());
}

}  // namespace
}  // namespace bertc::ir

#include "ir/philox.h"

namespace bertc::ir {
namespace {

// Known-answer vectors of Random123 (tests/kat_vectors, "philox4x32 10").
TEST(Philox, MatchesRandom123KnownAnswers) {
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}), (PhiloxCounter{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (PhiloxCounter{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (PhiloxCounter{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Philox, DropoutMaskKeepsAboutOneMinusP) {
  const uint32_t threshold = dropout_threshold(0.1);
  EXPECT_EQ(threshold, 1677722u);  // ceil(0.1 * 2^24)
  int kept = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) kept += dropout_keep(42, 3, static_cast<uint64_t>(i), threshold);
  // Binomial(1e5, 0.9): standard deviation ~95, so +-600 is a > 6 sigma band.
  EXPECT_NEAR(kept, 90000, 600);
  // Another offset (another dropout op) or seed (another step) gives another mask.
  int same_offset = 0, same_seed = 0;
  for (int i = 0; i < 1000; ++i) {
    same_offset += dropout_keep(42, 3, i, threshold) == dropout_keep(42, 4, i, threshold);
    same_seed += dropout_keep(42, 3, i, threshold) == dropout_keep(43, 3, i, threshold);
  }
  EXPECT_LT(same_offset, 900);  // independent masks agree on ~82% of elements
  EXPECT_LT(same_seed, 900);
  EXPECT_EQ(dropout_threshold(0.0), 0u);  // p = 0 keeps everything
}

}  // namespace
}  // namespace bertc::ir
