// Unit tests for dead-code elimination.
#include <gtest/gtest.h>

#include "frontend/bert.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/dce.h"
#include "passes/registry.h"
#include "run_config/config.h"

namespace bertc::passes {
namespace {

using ir::Builder;
using ir::Tensor;

TEST(Dce, RemovesOnlyWhatNoOutputNeeds) {
  Builder b("g");
  Tensor x = b.input("x", ir::DType::F32, {4});
  Tensor unused_param = b.param("unused", {4});
  Tensor dead = b.name(exp(x) * 3.0, "dead");  // exp, constant, mul: all dead
  Tensor live = tanh(x);
  b.output(live, "y");
  ir::Graph g = std::move(b).finish();
  EXPECT_EQ(eliminate_dead_code(g), 3u);
  EXPECT_TRUE(ir::verify(g).empty());
  EXPECT_FALSE(g.find("dead").has_value());         // its name is free again
  EXPECT_TRUE(g.find("unused").has_value());        // params are the step's interface
  EXPECT_EQ(g.value(g.outputs()[0]).name, "y");
  EXPECT_EQ(g.producer(g.outputs()[0]).kind, ir::OpKind::Tanh);  // producer index updated
  EXPECT_EQ(eliminate_dead_code(g), 0u);            // idempotent
  (void)dead;
  (void)unused_param;
}

TEST(Dce, TheBertGraphHasNoDeadCode) {
  run_config::Config c;
  c.model.hidden_size = 128;
  c.model.num_attention_heads = 2;
  c.model.num_hidden_layers = 2;
  ir::Graph g = frontend::build_bert_pretraining(c.model_settings());
  const std::string before = ir::print(g);
  EXPECT_EQ(eliminate_dead_code(g), 0u);
  EXPECT_EQ(ir::print(g), before);
}

TEST(Registry, FindsPassesByName) {
  ASSERT_NE(find_pass("dce"), nullptr);
  ASSERT_NE(find_pass("verify"), nullptr);
  EXPECT_EQ(find_pass("fusion-not-yet"), nullptr);
  ir::Graph bad("g");
  bad.add_op(ir::OpKind::Input, {}, {}, {{ir::DType::F32, {2}}});  // no outputs
  PassContext context;
  EXPECT_THROW(find_pass("verify")->run(bad, context), ir::VerifyError);
}

}  // namespace
}  // namespace bertc::passes
