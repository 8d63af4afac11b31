// The traits column of ir/ops.def: consistent in itself, and complete for every stage that reads
// it, so that a new op whose traits are wrong or missing fails here instead of being treated
// worse somewhere (an opaque kernel, no in-place reuse, never recomputed).
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "ir/builder.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace bertc::ir {
namespace {

bool no_kernel(FusionPattern p) {
  return p == FusionPattern::Source || p == FusionPattern::View || p == FusionPattern::Effect;
}

TEST(OpTraits, ExactlyTheOpsWithoutAKernelHaveNoFamily) {
  for (const OpInfo& op : all_ops()) {
    if (op.kind == OpKind::Fused) continue;  // its family is its `kernel` attribute
    EXPECT_EQ(no_kernel(op.traits.pattern), op.traits.family == KernelFamily::None) << op.name;
    EXPECT_EQ(launches_kernel(op.kind), !no_kernel(op.traits.pattern)) << op.name;
  }
  EXPECT_TRUE(launches_kernel(OpKind::Fused));
}

TEST(OpTraits, SourcesAreTheOpsWithoutOperands) {
  for (const OpInfo& op : all_ops())
    EXPECT_EQ(is_source(op.kind), op.max_operands() == 0) << op.name;
}

TEST(OpTraits, OnlyElementwiseOpsRunInPlace) {
  for (const OpInfo& op : all_ops()) {
    if (may_run_in_place(op.kind)) {
      EXPECT_EQ(op.traits.pattern, FusionPattern::Elementwise) << op.name;
    }
  }
}

TEST(OpTraits, NothingWithoutAKernelOrAcrossRowsIsCheapToRecompute) {
  for (const OpInfo& op : all_ops()) {
    if (!cheap_to_recompute(op.kind)) continue;
    EXPECT_NE(op.traits.pattern, FusionPattern::Source) << op.name;
    EXPECT_NE(op.traits.pattern, FusionPattern::Effect) << op.name;
    EXPECT_NE(op.traits.pattern, FusionPattern::Matmul) << op.name;
    EXPECT_NE(op.traits.pattern, FusionPattern::Reduce) << op.name;
    EXPECT_NE(op.traits.pattern, FusionPattern::Optimizer) << op.name;
  }
}

// A kernel expression is an elementwise op's, and names only operands the op has.
TEST(OpTraits, KernelExpressionsNameTheirOperands) {
  const std::regex placeholder(R"(\{(\d+)\})");
  for (const OpInfo& op : all_ops()) {
    const std::string expression(op.traits.kernel);
    if (expression.empty()) continue;
    EXPECT_EQ(op.traits.pattern, FusionPattern::Elementwise) << op.name;
    std::set<size_t> used;
    for (auto it = std::sregex_iterator(expression.begin(), expression.end(), placeholder); it != std::sregex_iterator();
         ++it)
      used.insert(std::stoul((*it)[1]));
    ASSERT_FALSE(used.empty()) << op.name << ": " << expression;
    EXPECT_LT(*used.rbegin(), op.min_operands()) << op.name << ": " << expression;
    EXPECT_EQ(used.size(), op.min_operands()) << op.name << " leaves an operand unread: " << expression;
  }
}

// The elementwise ops the emitter writes by hand (codegen/emitter.cpp): every other elementwise op
// needs a kernel expression, or no kernel could compute it.
TEST(OpTraits, ElementwiseOpsWithoutAnExpressionAreTheEmittersOwn) {
  std::set<OpKind> custom;
  for (const OpInfo& op : all_ops())
    if (op.traits.pattern == FusionPattern::Elementwise && op.traits.kernel.empty()) custom.insert(op.kind);
  EXPECT_EQ(custom, (std::set<OpKind>{OpKind::Where, OpKind::Broadcast, OpKind::Cast, OpKind::Dropout}));
}

TEST(OpTraits, ABatchedGatherIsOpaqueToFusion) {
  Builder b("g");
  const Tensor table = b.input("table", DType::F32, {2, 5, 3});
  const Tensor rows = b.input("rows", DType::I32, {2, 4});
  const Tensor gathered = b.gather(table, rows, /*batch_dims=*/1);
  const Tensor embedded = b.gather(b.input("embeddings", DType::F32, {7, 3}), rows);
  b.output(gathered, "a");
  b.output(embedded, "b");
  const Graph g = std::move(b).finish();
  EXPECT_EQ(fusion_pattern(g.producer(gathered.id())), FusionPattern::Opaque);
  EXPECT_EQ(fusion_pattern(g.producer(embedded.id())), FusionPattern::Load);
}

TEST(OpTraits, AFusedOpsFamilyIsItsKernelAttribute) {
  for (KernelFamily f : {KernelFamily::Matmul, KernelFamily::RowReduction, KernelFamily::MultiTensorUpdate}) {
    Op op{OpKind::Fused, {}, {}, complete_attrs(op_info(OpKind::Fused), std::vector<NamedAttr>{{"kernel", std::string(enum_name(f))}}),
          {}, "", {}};
    EXPECT_EQ(kernel_family(op), f);
  }
  Op unknown{OpKind::Fused, {}, {}, complete_attrs(op_info(OpKind::Fused), std::vector<NamedAttr>{{"kernel", "matmul_epilogue"}}),
             {}, "", {}};
  try {
    kernel_family(unknown);
    FAIL() << "an unknown family was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fused op names kernel family 'matmul_epilogue' (known: none, pointwise, "),
              std::string::npos)
        << e.what();
  }
}

TEST(EnumNames, EveryFamilyPrintsAndParsesBack) {
  for (const std::string& name : enum_choices<KernelFamily>()) {
    const auto family = enum_from_name<KernelFamily>(name);
    ASSERT_TRUE(family) << name;
    EXPECT_EQ(enum_name(*family), name);
  }
  EXPECT_FALSE(enum_from_name<KernelFamily>("gather"));
  EXPECT_EQ(enum_choice_list<FusionPattern>().substr(0, 28), "source, view, effect, elemen");
  EXPECT_TRUE(enum_choice_list<FusionPattern>().ends_with("optimizer or opaque"));
}

}  // namespace
}  // namespace bertc::ir
