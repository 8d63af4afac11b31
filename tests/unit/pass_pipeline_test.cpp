// The pass registry and the textual pipeline bertc-opt takes: passes in pipeline order, their
// options from options.def, MLIR's syntax parsed with an error for every malformed input.
#include <gtest/gtest.h>

#include <set>

#include "passes/registry.h"

namespace bertc::passes {
namespace {

std::string error_of(std::string_view text) {
  try {
    parse_pipeline(text);
  } catch (const ir::Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(PassPipeline, ParsesPassesWithTheirOptions) {
  const auto p = parse_pipeline("precision{mode=fp32-fp16storage},recompute{policy=auto budget=1400000000},fusion");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].pass->name, "precision");
  EXPECT_EQ(p[0].options.compile.precision, Precision::Fp32Fp16Storage);
  EXPECT_EQ(p[1].pass->name, "recompute");
  EXPECT_EQ(p[1].options.compile.recompute, RecomputePolicy::Auto);
  EXPECT_EQ(p[1].options.compile.memory_budget, 1400000000);
  EXPECT_EQ(p[1].options.compile.precision, Precision::Auto);  // not given: the default
  EXPECT_EQ(p[2].pass->name, "fusion");
  EXPECT_TRUE(parse_pipeline("").empty());
  EXPECT_EQ(parse_pipeline(" dce , fusion ").size(), 2u);
  EXPECT_EQ(parse_pipeline("dce,\tfusion {}").size(), 2u);  // any white space, before braces too
  EXPECT_EQ(parse_pipeline("recompute{\tpolicy=full\n}")[0].options.compile.recompute, RecomputePolicy::Full);
  const auto o = parse_pipeline("optimizer{kind=lamb beta1=0.8 eps=1e-08 accumulation=4}");
  EXPECT_EQ(o[0].options.optimizer.optimizer.kind, ir::OpKind::Lamb);
  EXPECT_EQ(o[0].options.optimizer.beta1, 0.8);
  EXPECT_EQ(o[0].options.optimizer.epsilon, 1e-8);
  EXPECT_EQ(o[0].options.optimizer.gradient_accumulation_steps, 4);
  EXPECT_EQ(parse_pipeline("annotate-costs{arch=a100}")[0].options.compile.arch.sm(), 80);
}

// What a stage's dump says to run parses back to the same pass and options.
TEST(PassPipeline, InvocationTextParsesBackToItself) {
  PassOptions options;
  options.compile.precision = Precision::Bf16;
  options.compile.recompute = RecomputePolicy::Selective;
  options.optimizer.weight_decay = 0.05;
  for (const PassInfo& pass : registered_passes()) {
    const std::string text = invocation_text(pass, options);
    const auto parsed = parse_pipeline(text);
    ASSERT_EQ(parsed.size(), 1u) << text;
    EXPECT_EQ(parsed[0].pass, &pass);
    EXPECT_EQ(invocation_text(pass, parsed[0].options), text);
  }
  EXPECT_EQ(invocation_text(*find_pass("recompute"), options), "recompute{policy=selective budget=0}");
  EXPECT_EQ(invocation_text(*find_pass("fusion"), options), "fusion");
}

TEST(PassPipeline, MalformedPipelinesNameThePlaceAndTheFix) {
  const std::pair<std::string, std::string> cases[] = {
      {"fusion,nosuch", "column 8: unknown pass 'nosuch' (passes: verify, dce,"},
      {"fusion{x=1}", "column 8: pass fusion takes no options, found 'x'"},
      {"recompute{budget=1 mode=bf16}", "column 20: pass recompute has no option 'mode' (it takes: policy, budget)"},
      {"precision{mode=fp64}", "column 16: precision{mode} must be one of auto, fp32, fp16, bf16, fp32-fp16storage, tf32, "
                               "found \"fp64\""},
      {"recompute{budget=-1}", "column 18: recompute{budget} must be >= 0, found -1"},
      {"recompute{budget=12x}", "column 18: recompute{budget=...} must be an integer, found '12x'"},
      {"optimizer{beta1=1.5}", "column 17: optimizer{beta1} must be a probability in [0, 1), found 1.5"},
      {"optimizer{kind=sgd}", "column 16: optimizer{kind} must be one of adamw, lamb, lion, found \"sgd\""},
      {"precision{mode=bf16", "column 20: '{' of precision is not closed by '}'"},
      {"precision{mode}", "column 15: expected '='"},
      {"fusion,,dce", "column 8: expected a pass name"},
      {"fusion,", "column 8: expected a pass name"},
      {"fusion dce", "column 8: expected ','"},
      {"{mode=bf16}", "column 1: expected a pass name"},
      {"recompute{policy=full policy=none}", "column 23: recompute{policy} is given twice"},
      {"recompute{policy=auto,budget=5}", "column 22: the options of recompute are separated by spaces, not commas"},
      {"optimizer{eps=inf}", "column 15: optimizer{eps} must be finite, found inf"},
  };
  for (const auto& [text, message] : cases) {
    const std::string got = error_of(text);
    EXPECT_NE(got.find("pass pipeline '" + text + "', " + message), std::string::npos) << text << ": " << got;
  }
}

// The pipeline's order, stated independently of the registry that defines it.
TEST(PassPipeline, RegistryOrderIsThePipelineOrder) {
  std::vector<std::string_view> pipeline;
  for (const PassInfo& p : registered_passes())
    if (p.graphs != PipelineGraphs::None) pipeline.push_back(p.name);
  EXPECT_EQ(pipeline, (std::vector<std::string_view>{"attention", "precision", "autodiff", "accumulate", "optimizer",
                                                     "lower-lamb", "recompute", "fusion", "schedule"}));
}

// A pass named in options.def's pass column exists, so no option is silently unreachable.
TEST(PassPipeline, EveryPassAnOptionNamesIsRegistered) {
  std::set<std::string> named;
  auto collect = [&](std::string_view pass_keys) {
    while (!pass_keys.empty()) {
      const size_t space = pass_keys.find(' '), colon = pass_keys.find(':');
      named.emplace(pass_keys.substr(0, colon));
      pass_keys = space == std::string_view::npos ? std::string_view{} : pass_keys.substr(space + 1);
    }
  };
  for (const auto& spec : compile_option_specs()) collect(spec.pass_keys);
  for (const auto& spec : optimizer_option_specs()) collect(spec.pass_keys);
  EXPECT_EQ(named, (std::set<std::string>{"annotate-costs", "optimizer", "precision", "recompute"}));
  for (const std::string& pass : named) EXPECT_NE(find_pass(pass), nullptr) << pass;
}

}  // namespace
}  // namespace bertc::passes
