// Options declared once (support/options.h, passes/options.def, frontend/model_keys.def, run_config/config.def): every key
// of a config is known once, values are checked the same way wherever they come from, and the
// JSON a .bertx or a report holds reads back to the same options.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "run_config/config.h"
#include "passes/options.h"
#include "support/options_json.h"

namespace bertc::support {
namespace {

TEST(Options, ChecksSayWhatIsWrong) {
  EXPECT_EQ(check_problem(OptionValue(int64_t{0}), Check::Positive), "must be positive, found 0");
  EXPECT_EQ(check_problem(OptionValue(int64_t{-2}), Check::NonNegative), "must be >= 0, found -2");
  EXPECT_EQ(check_problem(OptionValue(int64_t{1}), Check::Probability), "must be a probability in [0, 1), found 1");
  EXPECT_EQ(check_problem(OptionValue(0.0), Check::PositiveFloat), "must be positive, found 0");
  EXPECT_FALSE(check_problem(OptionValue(0.5), Check::Probability));
  EXPECT_EQ(check_problem(OptionValue(INFINITY), Check::PositiveFloat), "must be finite, found inf");
  EXPECT_EQ(check_problem(OptionValue(-INFINITY), Check::NonNegativeFloat), "must be finite, found -inf");
  // Past f32, or a positive value f32 makes 0: what the f32 graph would compute with is not what
  // was written (a max_grad_norm of 1e39 an infinite constant, of 1e-50 clipping off).
  EXPECT_EQ(check_problem(OptionValue(1e39), Check::NonNegativeFloat),
            "must be at most 3.4028235e+38 (the largest f32, which bertc computes in), found 1e+39");
  EXPECT_EQ(check_problem(OptionValue(1e-300), Check::PositiveFloat),
            "is 0 in f32 (which bertc computes in; its least positive value is 1e-45), found 1e-300");
  EXPECT_EQ(check_problem(OptionValue(1e-50), Check::NonNegativeFloat),
            "is 0 in f32 (which bertc computes in; its least positive value is 1e-45), found 1e-50: write 0 if 0 "
            "is meant");
  EXPECT_FALSE(check_problem(OptionValue(3.4e38), Check::PositiveFloat));
  EXPECT_FALSE(check_problem(OptionValue(1e-45), Check::PositiveFloat));  // (f32's least: kept)
  EXPECT_FALSE(check_problem(OptionValue(0.0), Check::NonNegativeFloat));
  EXPECT_EQ(check_problem(OptionValue(0.5), Check::Seconds),
            "must be at least 1 (seconds: a shorter wait stops ranks that are only busy), found 0.5");
  EXPECT_FALSE(check_problem(OptionValue(int64_t{5}), Check::Seconds));
  EXPECT_EQ(choice_problem("sgd", {"adamw", "lamb"}), "must be one of adamw, lamb, found \"sgd\"");
}

TEST(Options, TextValuesOfEachKind) {
  EXPECT_EQ(value_from_text(ValueKind::Bool, "false"), OptionValue(false));
  EXPECT_EQ(value_from_text(ValueKind::Bool, "off"), OptionValue(false));
  EXPECT_FALSE(value_from_text(ValueKind::Bool, "maybe"));
  EXPECT_EQ(value_from_text(ValueKind::Int, "-12"), OptionValue(int64_t{-12}));
  EXPECT_FALSE(value_from_text(ValueKind::Int, "12x"));
  EXPECT_FALSE(value_from_text(ValueKind::Int, ""));
  // Digits past 64 bits are said to be out of range, not "not an integer".
  EXPECT_FALSE(value_from_text(ValueKind::Int, "99999999999999999999"));
  EXPECT_EQ(why_no_value(ValueKind::Int, "99999999999999999999"),
            "'99999999999999999999' is past the largest integer, 9223372036854775807");
  EXPECT_EQ(why_no_value(ValueKind::Int, "-99999999999999999999"),
            "'-99999999999999999999' is below the smallest integer, -9223372036854775808");
  EXPECT_EQ(why_no_value(ValueKind::Int, "12x"), "must be an integer, found '12x'");
  EXPECT_EQ(value_from_text(ValueKind::Float, "1e-06"), OptionValue(1e-6));
  EXPECT_EQ(value_text(OptionValue(1e-6)), "1e-06");
  EXPECT_EQ(flag_of("fused_attention"), "--fused-attention");
  EXPECT_EQ(pass_key_in("precision:mode annotate-costs:precision", "annotate-costs"), "precision");
  EXPECT_FALSE(pass_key_in("precision:mode", "fusion"));
}

// Every key a config may set, once per section, documented; each compile option has one flag.
TEST(Options, EveryKeyIsDeclaredOnceWithADoc) {
  std::set<std::string> keys, flags;
  for (const auto& spec : run_config::config_keys()) {
    EXPECT_TRUE(keys.insert(std::string(spec.section) + "." + std::string(spec.key)).second) << spec.key;
    EXPECT_FALSE(spec.doc.empty()) << spec.key;
  }
  EXPECT_TRUE(keys.count("train.optimizer") && keys.count("train.seq_len") && keys.count("compile.dump_ir") &&
              keys.count("model.hidden_size"));
  for (const auto& spec : passes::compile_option_specs()) EXPECT_TRUE(flags.insert(spec.flag()).second);
  EXPECT_TRUE(flags.count("--memory-budget") && flags.count("--dropout"));
}

TEST(Options, ProgramOptionsReadBackFromTheirJson) {
  passes::CompileOptions o;
  o.arch = passes::Arch::parse("a100");
  o.precision = passes::Precision::Fp32Fp16Storage;
  o.recompute = passes::RecomputePolicy::Auto;
  o.memory_budget = 123456;
  o.fused_attention = false;
  o.dump_ir = "somewhere";  // a Debug option: not part of the program
  const nlohmann::json j = options_json(passes::compile_option_specs(), o);
  EXPECT_FALSE(j.contains("dump_ir"));
  EXPECT_EQ(j.at("precision"), "fp32-fp16storage");
  const passes::CompileOptions r = options_from_json(passes::compile_option_specs(), j);
  EXPECT_EQ(r.arch.sm(), 80);
  EXPECT_EQ(r.arch.text(), "a100");
  EXPECT_EQ(r.precision, o.precision);
  EXPECT_EQ(r.recompute, o.recompute);
  EXPECT_EQ(r.memory_budget, o.memory_budget);
  EXPECT_FALSE(r.fused_attention);
  EXPECT_TRUE(r.dump_ir.empty());
  nlohmann::json bad = j;
  bad["memory_budget"] = "lots";
  EXPECT_THROW(options_from_json(passes::compile_option_specs(), bad), std::runtime_error);
  bad = j;
  bad["arch"] = "sm_99";
  try {
    options_from_json(passes::compile_option_specs(), bad);
    FAIL() << "an unknown arch was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("option arch must name a GPU arch: unknown arch 'sm_99'"), std::string::npos)
        << e.what();
  }
}

// Arch and precision become concrete once; downstream reads the typed values.
TEST(Options, ResolvingMakesArchAndPrecisionConcrete) {
  passes::CompileOptions o;
  EXPECT_FALSE(passes::is_resolved(o));
  const passes::CompileOptions none = passes::resolve_options(o, passes::Arch::none());
  EXPECT_TRUE(passes::is_resolved(none));
  EXPECT_EQ(none.arch.sm(), 0);
  EXPECT_EQ(none.precision, passes::Precision::Fp32);
  EXPECT_EQ(passes::resolve_options(o, passes::Arch::of_sm(70)).precision, passes::Precision::Fp16);
  EXPECT_EQ(passes::resolve_options(o, passes::Arch::parse("h200")).precision, passes::Precision::Bf16);
  o.precision = passes::Precision::Fp32;
  EXPECT_EQ(passes::resolve_options(o, passes::Arch::parse("h200")).precision, passes::Precision::Fp32);
  EXPECT_THROW(passes::Arch::parse("sm_99"), std::invalid_argument);
}

}  // namespace
}  // namespace bertc::support
