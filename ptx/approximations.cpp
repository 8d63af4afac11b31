// The ISA's error bounds of the approximate instructions and a worst case within them (approximations.h).
#include "ptx/approximations.h"

#include <bit>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>

#include <fmt/format.h>
#include <xxhash.h>

namespace bertc::ptx {
namespace {

float f32(uint64_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b)); }

// The exact function in double: within 2^-50 or so of the true value, far inside any bound here.
double exact_of(const Opcode& op, std::span<const float> x) {
  switch (op.op) {
    case Op::Rcp: return 1.0 / x[0];
    case Op::Sqrt: return std::sqrt(double{x[0]});
    case Op::Rsqrt: return 1.0 / std::sqrt(double{x[0]});
    case Op::Ex2: return std::exp2(double{x[0]});
    case Op::Lg2: return std::log2(double{x[0]});
    case Op::Sin: return std::sin(double{x[0]});
    case Op::Cos: return std::cos(double{x[0]});
    case Op::Tanh: return std::tanh(double{x[0]});
    case Op::Div: return double{x[0]} / x[1];
    default: throw std::logic_error("exact_of: not an approximate instruction");
  }
}

// `from` moved `steps` representable floats toward `toward`, stopping at zero and at the largest finite.
float step(float from, int steps, float toward) {
  for (int i = 0; i < steps; ++i) {
    const float next = std::nextafter(from, toward);
    if (std::isinf(next) || (from != 0 && (next == 0 || std::signbit(next) != std::signbit(from)))) break;
    from = next;
  }
  return from;
}

}  // namespace

bool is_approximate(const Opcode& op) {
  switch (op.op) {
    case Op::Rsqrt:
    case Op::Ex2:
    case Op::Lg2:
    case Op::Sin:
    case Op::Cos:
    case Op::Tanh: return true;
    case Op::Rcp:
    case Op::Sqrt: return op.has(Mod::approx);
    case Op::Div: return op.has(Mod::approx) || op.has(Mod::full);
    default: return false;
  }
}

ApproxBound approx_bound(const Opcode& op, std::span<const float> x) {
  using K = ApproxBound::Kind;
  constexpr double pi = std::numbers::pi;
  switch (op.op) {
    case Op::Rcp: return {K::Ulps, 1};  // ("maximum ulp error is 1": of the exact quotient)
    case Op::Sqrt: return {K::Relative, std::exp2(-23.0)};
    case Op::Rsqrt: return {K::Relative, std::exp2(-22.9)};
    case Op::Ex2: return {K::UlpsFromRounded, 2};  // ("2 ulp from correctly rounded result")
    case Op::Lg2:
      return x[0] > 0.5f && x[0] < 2.0f ? ApproxBound{K::Absolute, std::exp2(-22.0)} : ApproxBound{K::Relative, std::exp2(-22.0)};
    case Op::Sin:
    case Op::Cos:
      if (std::fabs(x[0]) <= 2 * pi) return {K::Absolute, std::exp2(-20.5)};
      if (std::fabs(x[0]) <= 100 * pi) return {K::Absolute, std::exp2(-14.7)};
      throw std::invalid_argument(fmt::format("the PTX ISA states no error bound for {}.approx.f32 of {} (outside "
                                              "[-100π, 100π]), so its worst case cannot be modelled: run it with "
                                              "correctly rounded results (bertc check --approx rounded)",
                                              op.op == Op::Sin ? "sin" : "cos", x[0]));
    case Op::Tanh: return {K::Relative, std::exp2(-11.0)};
    case Op::Div:
      if (op.has(Mod::approx) && x[1] != 0 && std::fabs(x[1]) < std::numeric_limits<float>::min())
        throw std::invalid_argument(fmt::format("the PTX ISA states no error bound for div.approx.f32 by the subnormal "
                                                "{} (its bound holds for divisors in [2^-126, 2^126]): run it with "
                                                "correctly rounded results (bertc check --approx rounded)",
                                                x[1]));
      return {K::Ulps, 2};
    default: throw std::logic_error("approx_bound: not an approximate instruction");
  }
}

uint32_t worst_case_result(const Opcode& op, std::span<const uint64_t> sources, uint32_t correctly_rounded,
                           uint64_t seed) {
  float x[2] = {};
  const size_t n = std::min<size_t>(sources.size(), 2);
  for (size_t i = 0; i < n; ++i) x[i] = f32(sources[i]);
  if (op.has(Mod::ftz))  // (the result was computed from flushed sources: the bound is of those)
    for (float& v : x)
      if (std::fpclassify(v) == FP_SUBNORMAL) v = std::copysign(0.0f, v);
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return correctly_rounded;  // (the ISA's special values: sin of ∞ is NaN, ...)
  // The ISA's tables of special values give the functions of ±0 exactly: ex2 and cos 1, sin and
  // tanh a zero, lg2 -∞, rcp and rsqrt ±∞, sqrt a zero; tanh passes a subnormal through.
  // (libdevice's expm1f leans on ex2(0) = 1: its e^x - 1 near 0 is a polynomial plus 2^0 - 1, and
  // a 2^0 off by 2 ulp would put 1e-7 of error onto results as small as 1e-3.)
  if (op.op != Op::Div && (x[0] == 0 || (op.op == Op::Tanh && std::fpclassify(x[0]) == FP_SUBNORMAL)))
    return correctly_rounded;
  const ApproxBound bound = approx_bound(op, std::span<const float>(x, n));  // (refused where there is none)
  const float rounded = std::bit_cast<float>(correctly_rounded);
  if (!std::isfinite(rounded)) return correctly_rounded;
  // (the direction: a hash of the seed, the operation and the sources' bits)
  uint64_t key[3] = {static_cast<uint64_t>(op.op), n > 0 ? sources[0] : 0, n > 1 ? sources[1] : 0};
  const bool up = XXH3_64bits_withSeed(key, sizeof key, seed) & 1;
  constexpr float inf = std::numeric_limits<float>::infinity();
  const double exact = exact_of(op, std::span<const float>(x, n));
  if (bound.kind == ApproxBound::Kind::UlpsFromRounded || bound.kind == ApproxBound::Kind::Ulps) {
    if (rounded == 0) return correctly_rounded;
    // (of the exact value: moving away from it, the rounding's part of an ulp is spent already,
    // so one step fewer; toward it or past it, all of them stay within)
    const bool away = up ? double{rounded} > exact : double{rounded} < exact;
    const int steps = static_cast<int>(bound.amount) - (bound.kind == ApproxBound::Kind::Ulps && away ? 1 : 0);
    return std::bit_cast<uint32_t>(step(rounded, steps, up ? inf : -inf));
  }
  if (bound.kind == ApproxBound::Kind::Relative && exact == 0) return correctly_rounded;
  const double reach = bound.kind == ApproxBound::Kind::Relative ? bound.amount * std::fabs(exact) : bound.amount;
  const double edge = up ? exact + reach : exact - reach;
  float result = static_cast<float>(edge);  // (to nearest: one step back toward the exact value where past the edge)
  if (std::isinf(result) || (up ? double{result} > edge : double{result} < edge))
    result = std::nextafter(std::isinf(result) ? std::copysign(std::numeric_limits<float>::max(), result) : result,
                            static_cast<float>(exact));
  // (a relative bound below 1 keeps the exact value's sign; an absolute one may cross zero, as a
  // GPU's lg2 of a number near 1 or sin near a multiple of π may)
  return std::bit_cast<uint32_t>(result);
}

}  // namespace bertc::ptx
