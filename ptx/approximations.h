// The error the PTX ISA allows each approximate instruction, and a worst case within it: a result
// moved as far from the exact one as the ISA's stated maximum error lets a GPU move it, so that a
// check of values against a reference proves its tolerances hold for any GPU the ISA describes,
// not only for the correctly rounded results the emulator computes by default.
//
// The bounds (PTX ISA 9.x, each instruction's "Notes"; f32 forms, the only ones bertc's kernels use):
//   rcp.approx.f32        1 ulp            sqrt.approx.f32   relative 2^-23
//   rsqrt.approx.f32      relative 2^-22.9 ex2.approx.f32    2 ulp
//   lg2.approx.f32        absolute 2^-22 for x in (0.5, 2), relative 2^-22 elsewhere
//   sin/cos.approx.f32    absolute 2^-20.5 for x in [-2π, 2π], 2^-14.7 in [-100π, 100π], none beyond
//   tanh.approx.f32       relative 2^-11   div.approx.f32 and div.full.f32   2 ulp
// ex2's ulps are counted from the correctly rounded result (the ISA says so); rcp's and div's, and
// the relative and absolute bounds, from the exact value (the result stays on the exact value's
// side of its edge). The ISA's tables of special values are exact: a function of ±0, ±∞ or NaN is
// what the table says (ex2(0) = 1, cos(0) = 1, sin(±0) = ±0, lg2(0) = -∞, ...), never moved, and
// tanh passes a subnormal through.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "ptx/opcode.h"

namespace bertc::ptx {

// How the emulator computes an approximate instruction's result.
enum class ApproxResults {
  CorrectlyRounded,  // the exact function rounded to nearest: inside every bound, never at its edge
  WorstCase,         // at the edge of the ISA's bound, up or down as a hash of the seed and sources picks
};

struct Approximation {
  ApproxResults results = ApproxResults::CorrectlyRounded;
  uint64_t seed = 0;  // (WorstCase: picks each result's direction, a function of the sources too)
};

struct ApproxBound {
  enum class Kind { UlpsFromRounded, Ulps, Relative, Absolute };  // (Ulps: of the exact value)
  Kind kind = Kind::Relative;
  double amount = 0;
};

// Whether `op` is an approximate instruction: rsqrt, ex2, lg2, sin, cos, tanh; rcp and sqrt
// .approx; div .approx and .full. (rcp.rn, sqrt.rn and div.rn are IEEE: exact to the rounding.)
bool is_approximate(const Opcode& op);

// The ISA's maximum error of the approximate f32 instruction `op` on the sources (after .ftz's
// flush). Throws std::invalid_argument where the ISA states none: sin and cos beyond [-100π,
// 100π], div.approx by a subnormal (past 2^126 the ISA defines the result: semantics.cpp).
ApproxBound approx_bound(const Opcode& op, std::span<const float> sources);

// The worst case of `op` on `sources` (f32 bits) whose correctly rounded result is
// `correctly_rounded` (f32 bits, flushed as .ftz flushes): moved to the edge of approx_bound, up
// or down as a hash of `seed`, the opcode and the sources picks (a function: the same sources give
// the same result). Infinities and NaNs are kept (the ISA's special values), zeros too under an ulp
// or relative bound (where they are exact); a result never overflows, and crosses zero only
// where an absolute bound reaches past it. Precondition: is_approximate(op).
// (An instruction the ISA bounds nowhere on these sources is refused, std::invalid_argument: run it
// with correctly rounded results, ApproxResults::CorrectlyRounded, bertc check's --approx rounded.)
uint32_t worst_case_result(const Opcode& op, std::span<const uint64_t> sources, uint32_t correctly_rounded,
                           uint64_t seed);

}  // namespace bertc::ptx
