// ptx/approximations: the worst case of each approximate instruction against the PTX ISA's stated
// maximum errors, written here from the ISA's text (not read from approximations.cpp's table): every
// result inside its bound and at its edge (ex2's ulps counted from the correctly rounded result, as
// the ISA counts them; rcp's and div's, and relative and absolute bounds, from the exact value), in
// both directions, the same sources giving the same result; the ISA's special values kept; where
// the ISA states no bound, a refusal.
#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <functional>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "ptx/semantics.h"

namespace bertc::ptx {
namespace {

uint64_t f(float x) { return std::bit_cast<uint32_t>(x); }
float as_float(uint64_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b)); }
uint64_t run(const char* opcode, std::vector<uint64_t> sources, ApproxResults results, uint64_t seed = 1) {
  return compute(decode_opcode(opcode), sources, {results, seed}).value;
}
// Floats between a and b, counted (same sign).
int64_t floats_apart(float a, float b) {
  return std::llabs(int64_t{std::bit_cast<int32_t>(a)} - int64_t{std::bit_cast<int32_t>(b)});
}

// An instruction, its exact function, the ISA's bound on a range of sources.
struct Bounded {
  const char* opcode;
  std::function<double(double, double)> exact;
  enum class Kind { UlpsFromRounded, Ulps, Relative, Absolute } kind;  // (Ulps: of the exact value)
  double amount;
  double lo, hi;  // the first source's range (the second, a divisor, in [0.5, 1000])
};

TEST(PtxApproximations, WorstCasesLieAtTheEdgeOfTheIsasBounds) {
  using K = Bounded::Kind;
  constexpr double pi = std::numbers::pi;
  const std::vector<Bounded> cases = {
      // (PTX ISA, the Notes of each instruction's section)
      {"rcp.approx.f32", [](double x, double) { return 1 / x; }, K::Ulps, 1, 0.01, 100},
      {"rcp.approx.ftz.f32", [](double x, double) { return 1 / x; }, K::Ulps, 1, -100, -0.01},
      {"sqrt.approx.f32", [](double x, double) { return std::sqrt(x); }, K::Relative, std::exp2(-23), 1e-3, 1e3},
      {"rsqrt.approx.ftz.f32", [](double x, double) { return 1 / std::sqrt(x); }, K::Relative, std::exp2(-22.9), 1e-3, 1e3},
      {"ex2.approx.ftz.f32", [](double x, double) { return std::exp2(x); }, K::UlpsFromRounded, 2, -30, 30},
      {"lg2.approx.f32", [](double x, double) { return std::log2(x); }, K::Absolute, std::exp2(-22), 0.51, 1.99},
      {"lg2.approx.ftz.f32", [](double x, double) { return std::log2(x); }, K::Relative, std::exp2(-22), 2.5, 1e4},
      {"sin.approx.f32", [](double x, double) { return std::sin(x); }, K::Absolute, std::exp2(-20.5), -2 * pi, 2 * pi},
      {"cos.approx.ftz.f32", [](double x, double) { return std::cos(x); }, K::Absolute, std::exp2(-14.7), 2.1 * pi, 99 * pi},
      {"tanh.approx.f32", [](double x, double) { return std::tanh(x); }, K::Relative, std::exp2(-11), -5, 5},
      {"div.approx.f32", [](double a, double b) { return a / b; }, K::Ulps, 2, -50, 50},
      {"div.full.ftz.f32", [](double a, double b) { return a / b; }, K::Ulps, 2, -50, 50},
  };
  std::mt19937 random(3);
  for (const Bounded& c : cases) {
    SCOPED_TRACE(c.opcode);
    std::uniform_real_distribution<float> first(static_cast<float>(c.lo), static_cast<float>(c.hi)), divisor(0.5f, 1000.0f);
    int up = 0, down = 0;
    for (int i = 0; i < 400; ++i) {
      const float a = first(random), b = divisor(random);
      const std::vector<uint64_t> sources = std::string(c.opcode).starts_with("div") ? std::vector{f(a), f(b)} : std::vector{f(a)};
      const float worst = as_float(run(c.opcode, sources, ApproxResults::WorstCase));
      const float rounded = as_float(run(c.opcode, sources, ApproxResults::CorrectlyRounded));
      ASSERT_EQ(f(worst), run(c.opcode, sources, ApproxResults::WorstCase));  // (a function of its sources)
      const double exact = c.exact(a, b);
      if (c.kind == K::UlpsFromRounded) {
        // (counted from the correctly rounded result: exactly that many floats away)
        ASSERT_EQ(floats_apart(worst, rounded), static_cast<int64_t>(c.amount)) << a << " " << b;
      } else if (c.kind == K::Ulps) {
        // (of the exact value, in the float spacing there: within the bound, and past one ulp less)
        const double ulp = std::fabs(std::nextafter(std::fabs(rounded), INFINITY) - std::fabs(rounded));
        const double off = std::fabs(worst - exact) / ulp;
        ASSERT_LE(off, c.amount + 1e-9) << a << " " << b;
        ASSERT_GE(off, c.amount - 1) << a << " " << b;
        ASSERT_GE(floats_apart(worst, rounded), static_cast<int64_t>(c.amount) - 1) << a << " " << b;
      } else {
        const double reach = c.kind == K::Relative ? c.amount * std::fabs(exact) : c.amount;
        const double off = std::fabs(worst - exact);
        const double ulp = std::fabs(std::nextafter(worst, INFINITY) - worst);
        ASSERT_LE(off, reach) << a;
        ASSERT_GE(off, reach - ulp) << a;  // (at the edge: within a float's step of it)
      }
      (worst > exact ? up : down) += worst != exact;  // (which side of the exact value it lies on)
    }
    EXPECT_GT(up, 100);  // (both directions, about half each: a hash picks them)
    EXPECT_GT(down, 100);
  }
}

TEST(PtxApproximations, SeedsPickOtherDirections) {
  int differ = 0;
  for (int i = 1; i <= 200; ++i) {
    const std::vector<uint64_t> x = {f(static_cast<float>(i) / 7)};
    differ += run("ex2.approx.f32", x, ApproxResults::WorstCase, 1) != run("ex2.approx.f32", x, ApproxResults::WorstCase, 2);
  }
  EXPECT_GT(differ, 50);
  EXPECT_LT(differ, 150);
}

TEST(PtxApproximations, SpecialValuesAndExactFormsAreKept) {
  for (ApproxResults results : {ApproxResults::CorrectlyRounded, ApproxResults::WorstCase}) {
    EXPECT_EQ(run("ex2.approx.f32", {f(-INFINITY)}, results), f(0.0f));
    EXPECT_EQ(run("ex2.approx.f32", {f(INFINITY)}, results), f(INFINITY));
    EXPECT_EQ(run("rcp.approx.f32", {f(0.0f)}, results), f(INFINITY));
    EXPECT_EQ(run("rcp.approx.f32", {f(-0.0f)}, results), f(-INFINITY));
    EXPECT_TRUE(std::isnan(as_float(run("sqrt.approx.f32", {f(-1.0f)}, results))));
    EXPECT_EQ(run("ex2.approx.ftz.f32", {f(-140.0f)}, results), f(0.0f));  // (a subnormal result flushed)
    // (the ISA's tables of special values: functions of zeros and subnormals are exact)
    EXPECT_EQ(run("ex2.approx.f32", {f(0.0f)}, results), f(1.0f));
    EXPECT_EQ(run("ex2.approx.f32", {f(-0.0f)}, results), f(1.0f));
    EXPECT_EQ(run("tanh.approx.f32", {f(1e-40f)}, results), f(1e-40f));  // (tanh passes a subnormal through)
    EXPECT_EQ(run("cos.approx.f32", {f(-0.0f)}, results), f(1.0f));
    EXPECT_EQ(run("sin.approx.f32", {f(-0.0f)}, results), f(-0.0f));
    EXPECT_EQ(run("lg2.approx.f32", {f(0.0f)}, results), f(-INFINITY));
    EXPECT_EQ(run("rsqrt.approx.f32", {f(0.0f)}, results), f(INFINITY));
    // The IEEE forms are exact to their rounding in either mode.
    EXPECT_EQ(run("rcp.rn.f32", {f(3.0f)}, results), f(1.0f / 3.0f));
    EXPECT_EQ(run("sqrt.rn.f32", {f(2.0f)}, results), f(std::sqrt(2.0f)));
    EXPECT_EQ(run("div.rn.f32", {f(1.0f), f(3.0f)}, results), f(1.0f / 3.0f));
    // div.approx is a * (1/b): for |b| in (2^126, 2^128) the ISA defines 0, and NaN for an infinite a.
    EXPECT_EQ(run("div.approx.f32", {f(1.0f), f(0x1p127f)}, results), f(0.0f));
    EXPECT_EQ(run("div.approx.f32", {f(-1.0f), f(0x1p127f)}, results), f(-0.0f));
    EXPECT_EQ(run("div.approx.f32", {f(INFINITY), f(0x1p127f)}, results), 0x7fffffffu);
  }
  // A result at the top of the floats stays finite, whichever way a seed moves it (and some move it).
  int moved = 0;
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    const float top = as_float(run("div.full.f32", {f(FLT_MAX), f(1.0f)}, ApproxResults::WorstCase, seed));
    EXPECT_TRUE(std::isfinite(top)) << seed;
    moved += top != FLT_MAX;
  }
  EXPECT_GT(moved, 0);
  EXPECT_LT(moved, 16);  // (the seeds that move it up stop at the largest float)
}

TEST(PtxApproximations, WhereTheIsaStatesNoBoundTheWorstCaseIsRefused) {
  // (sin and cos: no bound outside [-100π, 100π]; div.approx: its bound holds for divisors of at
  // least 2^-126; correctly rounded results are given either way)
  EXPECT_THROW(run("sin.approx.f32", {f(400.0f)}, ApproxResults::WorstCase), std::invalid_argument);
  EXPECT_THROW(run("div.approx.f32", {f(1.0f), f(1e-40f)}, ApproxResults::WorstCase), std::invalid_argument);
  EXPECT_NO_THROW(run("sin.approx.f32", {f(400.0f)}, ApproxResults::CorrectlyRounded));
  EXPECT_NO_THROW(run("div.approx.ftz.f32", {f(1.0f), f(1e-40f)}, ApproxResults::WorstCase));  // (flushed: 1/0)
}

}  // namespace
}  // namespace bertc::ptx
