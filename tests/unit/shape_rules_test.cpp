// Unit tests for the shape and dtype rules: right result types, and refusals that name the
// operand at fault.
#include <gtest/gtest.h>

#include "ir/shape_rules.h"

namespace bertc::ir {
namespace {

TensorType f32(Shape s) { return {DType::F32, std::move(s)}; }
TensorType i32(Shape s) { return {DType::I32, std::move(s)}; }

std::vector<TensorType> infer(OpKind kind, std::vector<TensorType> operands, std::vector<NamedAttr> attrs = {},
                              std::vector<TensorType> declared = {}) {
  return infer_result_types(kind, operands, complete_attrs(op_info(kind), attrs), declared);
}

// The rule's complaint for operand `operand` (-1: the op as a whole), as text.
std::string refusal(OpKind kind, std::vector<TensorType> operands, std::vector<NamedAttr> attrs, int operand,
                    std::vector<TensorType> declared = {}) {
  try {
    infer(kind, operands, attrs, declared);
  } catch (const InferError& e) {
    EXPECT_EQ(e.operand(), operand);
    return e.what();
  }
  ADD_FAILURE() << "the rule accepted it";
  return "";
}

TEST(Rules, MatmulShapesWithTransposesAndBatchBroadcast) {
  EXPECT_EQ(infer(OpKind::Matmul, {f32({32, 128, 768}), f32({2304, 768})}, {{"transpose_b", true}})[0],
            f32({32, 128, 2304}));
  EXPECT_EQ(infer(OpKind::Matmul, {f32({8, 12, 128, 64}), f32({8, 12, 128, 64})}, {{"transpose_b", true}})[0],
            f32({8, 12, 128, 128}));
  EXPECT_EQ(infer(OpKind::Matmul, {f32({4, 3}), f32({4, 5})}, {{"transpose_a", true}})[0], f32({3, 5}));
  EXPECT_EQ(infer(OpKind::Matmul, {f32({2, 1, 3, 4}), f32({5, 4, 6})})[0], f32({2, 5, 3, 6}));
  EXPECT_NE(refusal(OpKind::Matmul, {f32({3, 4}), f32({5, 6})}, {}, 1).find("expected contraction size 4"),
            std::string::npos);
  EXPECT_NE(refusal(OpKind::Matmul, {f32({3, 4}), i32({4, 6})}, {}, 1).find("expected dtype f32"), std::string::npos);
  EXPECT_NE(refusal(OpKind::Matmul, {f32({2, 3, 4}), f32({3, 4, 6})}, {}, 1).find("batch dims"), std::string::npos);
}

TEST(Rules, BinaryBroadcastsAndChecksDtype) {
  EXPECT_EQ(infer(OpKind::Add, {f32({8, 128, 768}), f32({768})})[0], f32({8, 128, 768}));
  EXPECT_EQ(infer(OpKind::Mul, {f32({}), f32({2, 3})})[0], f32({2, 3}));
  refusal(OpKind::Sub, {f32({3}), f32({4})}, {}, 1);
  refusal(OpKind::Div, {f32({3}), i32({3})}, {}, 1);
}

TEST(Rules, UnaryNeedsFloat) {
  EXPECT_EQ(infer(OpKind::Gelu, {f32({2, 3})})[0], f32({2, 3}));
  refusal(OpKind::Exp, {i32({2})}, {}, 0);
  refusal(OpKind::Softmax, {f32({})}, {}, 0);  // no last axis
}

TEST(Rules, Reductions) {
  EXPECT_EQ(infer(OpKind::ReduceSum, {f32({2, 3, 4})}, {{"axes", std::vector<int64_t>{0, 2}}})[0], f32({3}));
  EXPECT_EQ(infer(OpKind::ReduceMax, {f32({2, 3, 4})}, {{"axes", std::vector<int64_t>{1}}, {"keepdim", true}})[0],
            f32({2, 1, 4}));
  refusal(OpKind::ReduceMean, {f32({2, 3})}, {{"axes", std::vector<int64_t>{2}}}, -1);
  refusal(OpKind::ReduceMean, {f32({2, 3})}, {{"axes", std::vector<int64_t>{}}}, -1);
  refusal(OpKind::ReduceMean, {f32({2, 3})}, {{"axes", std::vector<int64_t>{1, 1}}}, -1);
}

TEST(Rules, LayoutOps) {
  EXPECT_EQ(infer(OpKind::Permute, {f32({3, 8, 2, 128, 64})}, {{"perm", std::vector<int64_t>{1, 3, 0, 2, 4}}})[0],
            f32({8, 128, 3, 2, 64}));
  refusal(OpKind::Permute, {f32({2, 3})}, {{"perm", std::vector<int64_t>{0, 2}}}, -1);
  EXPECT_EQ(infer(OpKind::Reshape, {f32({8, 128, 768})}, {}, {f32({1024, 768})})[0], f32({1024, 768}));
  refusal(OpKind::Reshape, {f32({2, 3})}, {}, -1, {f32({7})});
  refusal(OpKind::Reshape, {f32({2, 3})}, {}, -1, {i32({6})});
  EXPECT_EQ(infer(OpKind::Broadcast, {f32({1, 4})}, {}, {f32({3, 4})})[0], f32({3, 4}));
  refusal(OpKind::Broadcast, {f32({2, 4})}, {}, 0, {f32({3, 4})});
  EXPECT_EQ(infer(OpKind::Slice, {f32({512, 768})}, {{"axis", int64_t{0}}, {"start", int64_t{0}}, {"end", int64_t{128}}})[0],
            f32({128, 768}));
  refusal(OpKind::Slice, {f32({4})}, {{"axis", int64_t{0}}, {"start", int64_t{3}}, {"end", int64_t{3}}}, -1);
  refusal(OpKind::Slice, {f32({4})}, {{"axis", int64_t{1}}, {"start", int64_t{0}}, {"end", int64_t{1}}}, -1);
  EXPECT_EQ(infer(OpKind::Concat, {f32({768, 768}), f32({768, 768}), f32({768, 768})}, {{"axis", int64_t{0}}})[0],
            f32({2304, 768}));
  refusal(OpKind::Concat, {f32({2, 3}), f32({2, 4})}, {{"axis", int64_t{0}}}, 1);
  EXPECT_EQ(infer(OpKind::Cast, {f32({2, 3})}, {}, {{DType::BF16, {2, 3}}})[0], TensorType({DType::BF16, {2, 3}}));
  refusal(OpKind::Cast, {f32({2, 3})}, {}, -1, {{DType::BF16, {3, 2}}});
}

TEST(Rules, GatherForEmbeddingsAndMaskedPositions) {
  EXPECT_EQ(infer(OpKind::Gather, {f32({30522, 768}), i32({32, 128})})[0], f32({32, 128, 768}));
  EXPECT_EQ(infer(OpKind::Gather, {f32({32, 128, 768}), i32({32, 20})}, {{"batch_dims", int64_t{1}}})[0],
            f32({32, 20, 768}));
  refusal(OpKind::Gather, {f32({32, 128, 768}), i32({16, 20})}, {{"batch_dims", int64_t{1}}}, 1);
  refusal(OpKind::Gather, {f32({10, 4}), f32({3})}, {}, 1);
  refusal(OpKind::Gather, {f32({10}), i32({3})}, {{"batch_dims", int64_t{1}}}, -1);
  // padding_idx: a row of the table (the last one included) or -1; past the rows it names none,
  // and 2^32 read as 32 bits would be row 0
  EXPECT_EQ(infer(OpKind::Gather, {f32({10, 4}), i32({3})}, {{"padding_idx", int64_t{9}}})[0], f32({3, 4}));
  refusal(OpKind::Gather, {f32({10, 4}), i32({3})}, {{"padding_idx", int64_t{10}}}, -1);
  refusal(OpKind::Gather, {f32({10, 4}), i32({3})}, {{"padding_idx", int64_t{1} << 32}}, -1);
  refusal(OpKind::Gather, {f32({10, 4}), i32({3})}, {{"padding_idx", int64_t{-2}}}, -1);
}

TEST(Rules, CompositeOps) {
  EXPECT_EQ(infer(OpKind::LayerNorm, {f32({8, 128}), f32({128}), f32({128})})[0], f32({8, 128}));
  refusal(OpKind::LayerNorm, {f32({8, 128}), f32({128}), f32({64})}, {}, 2);
  refusal(OpKind::LayerNorm, {f32({8, 128}), f32({128}), f32({128})}, {{"eps", 0.0}}, -1);
  const TensorType seed{DType::I64, {}};
  EXPECT_EQ(infer(OpKind::Dropout, {f32({8, 128}), seed}, {{"p", 0.1}, {"offset", int64_t{4}}})[0], f32({8, 128}));
  refusal(OpKind::Dropout, {f32({8}), seed}, {{"p", 1.0}, {"offset", int64_t{0}}}, -1);
  refusal(OpKind::Dropout, {f32({8}), seed}, {{"p", 0.5}, {"offset", int64_t{-1}}}, -1);
  EXPECT_EQ(infer(OpKind::CrossEntropy, {f32({640, 30522}), i32({640}), f32({640})})[0], f32({}));
  refusal(OpKind::CrossEntropy, {f32({640, 30522}), i32({641})}, {}, 1);
  refusal(OpKind::CrossEntropy, {f32({640, 30522}), i32({640}), f32({3})}, {}, 2);
  refusal(OpKind::CrossEntropy, {f32({640}), i32({640})}, {}, 0);
}

// Rows of several examples: blocks = true takes example_ids i32 [B,S] last (after the seed, where
// there is one), and only for self-attention; ids without blocks, or blocks without ids, refused.
TEST(Rules, AttentionOfRowsTakesExampleIdsLast) {
  const TensorType qkv = f32({2, 8, 3, 2, 4}), bias = f32({2, 1, 1, 8}), seed{DType::I64, {}}, ids = i32({2, 8});
  const std::vector<NamedAttr> blocks{{"scale", 0.5}, {"p", 0.1}, {"blocks", true}};
  EXPECT_EQ(infer(OpKind::AttentionQkv, {qkv, bias, seed, ids}, blocks)[0], f32({2, 8, 2, 4}));
  EXPECT_EQ(infer(OpKind::AttentionQkv, {qkv, bias, ids}, {{"scale", 0.5}, {"blocks", true}})[0], f32({2, 8, 2, 4}));
  EXPECT_NE(refusal(OpKind::AttentionQkv, {qkv, bias, seed, i32({2, 7})}, blocks, -1).find("example_ids, must be i32[2, 8]"),
            std::string::npos);
  refusal(OpKind::AttentionQkv, {qkv, bias, seed, f32({2, 8})}, blocks, -1);
  EXPECT_NE(refusal(OpKind::AttentionQkv, {qkv, bias, ids}, {{"scale", 0.5}}, 2).find("example ids need blocks = true"),
            std::string::npos);
  EXPECT_NE(refusal(OpKind::AttentionQkv, {qkv, bias, seed}, blocks, -1).find("needs the example_ids operand"),
            std::string::npos);
  EXPECT_NE(refusal(OpKind::AttentionQkv, {qkv, bias, seed, ids}, {{"scale", 0.5}, {"p", 0.1}}, -1)
                .find("an example_ids operand needs blocks = true"),
            std::string::npos);
  const TensorType q = f32({2, 2, 8, 4}), k = f32({2, 2, 6, 4});
  EXPECT_NE(refusal(OpKind::Attention, {q, k, k, f32({2, 1, 1, 6}), seed, ids}, blocks, -1).find("self-attention"),
            std::string::npos);
}

TEST(Rules, GradientOps) {
  EXPECT_EQ(infer(OpKind::GeluGrad, {f32({2, 3}), f32({2, 3})})[0], f32({2, 3}));
  refusal(OpKind::GeluGrad, {f32({2, 3}), f32({3, 2})}, {}, 1);
  const auto ln = infer(OpKind::LayerNormGrad, {f32({8, 16}), f32({8, 16}), f32({16})});
  EXPECT_EQ(ln, (std::vector<TensorType>{f32({8, 16}), f32({16}), f32({16})}));
  refusal(OpKind::LayerNormGrad, {f32({8, 16}), f32({8, 16}), f32({8})}, {}, 2);
  EXPECT_EQ(infer(OpKind::CrossEntropyGrad, {f32({}), f32({6, 5}), i32({6}), f32({6})})[0], f32({6, 5}));
  // The forward rule's complaint about labels (its operand 1) is this op's operand 2.
  refusal(OpKind::CrossEntropyGrad, {f32({}), f32({6, 5}), i32({7})}, {}, 2);
  refusal(OpKind::CrossEntropyGrad, {f32({2}), f32({6, 5}), i32({6})}, {}, 0);
  EXPECT_EQ(infer(OpKind::ScatterAdd, {f32({4, 3, 8}), i32({4, 3}), i32({12})}, {}, {f32({100, 8})})[0], f32({100, 8}));
  refusal(OpKind::ScatterAdd, {f32({4, 3, 7}), i32({4, 3}), i32({12})}, {}, 0, {f32({100, 8})});
  refusal(OpKind::ScatterAdd, {f32({4, 3, 8}), i32({4, 3}), i32({11})}, {}, 2, {f32({100, 8})});  // not the indices' order
  EXPECT_EQ(infer(OpKind::ArgSort, {i32({4, 3})}, {{"rows", int64_t{100}}})[0], i32({12}));
  refusal(OpKind::ArgSort, {f32({4, 3})}, {{"rows", int64_t{100}}}, 0);
  refusal(OpKind::ArgSort, {i32({4, 3})}, {{"rows", int64_t{0}}}, -1);
  refusal(OpKind::ArgSort, {i32({4, 3})}, {{"rows", int64_t{100}}, {"batch_dims", int64_t{3}}}, -1);
  EXPECT_EQ(infer(OpKind::Pad, {f32({2, 1, 4})}, {{"axis", int64_t{1}}, {"before", int64_t{0}}, {"after", int64_t{127}}})[0],
            f32({2, 128, 4}));
  refusal(OpKind::Pad, {f32({2})}, {{"axis", int64_t{0}}, {"before", int64_t{-1}}, {"after", int64_t{0}}}, -1);
}

TEST(Rules, OptimizerAndUpdate) {
  const TensorType lr{DType::F32, {}}, step{DType::I64, {}};
  const std::vector<NamedAttr> hyper = {{"beta1", 0.9}, {"beta2", 0.999}, {"eps", 1e-6}, {"weight_decay", 0.01}};
  EXPECT_EQ(infer(OpKind::Adamw, {f32({4, 4}), f32({4, 4}), f32({4, 4}), f32({4, 4}), lr, step}, hyper),
            (std::vector<TensorType>{f32({4, 4}), f32({4, 4}), f32({4, 4})}));
  refusal(OpKind::Lamb, {f32({4, 4}), f32({4, 3}), f32({4, 4}), f32({4, 4}), lr, step}, hyper, 1);
  refusal(OpKind::Lamb, {f32({4}), f32({4}), f32({4}), f32({4}), lr, lr}, hyper, 5);
  auto bad = hyper;
  bad[1].value = 1.0;
  refusal(OpKind::Adamw, {f32({4}), f32({4}), f32({4}), f32({4}), lr, step}, bad, -1);
  EXPECT_TRUE(infer(OpKind::Update, {f32({4}), f32({4})}).empty());
  refusal(OpKind::Update, {f32({4}), f32({5})}, {}, 1);
}

TEST(Rules, SourcesTakeTheDeclaredType) {
  EXPECT_EQ(infer(OpKind::Param, {}, {}, {f32({768})})[0], f32({768}));
  refusal(OpKind::Input, {}, {}, -1);  // no declared type
  refusal(OpKind::Constant, {}, {{"value", 1.0}}, -1, {{DType::Bool, {}}});
  refusal(OpKind::Input, {}, {}, -1, {f32({int64_t{1} << 40, int64_t{1} << 40})});  // too large
}

}  // namespace
}  // namespace bertc::ir
