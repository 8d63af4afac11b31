// What one thread's arithmetic, logic, comparison and conversion instructions compute, from the
// bits of their source operands: the PTX ISA document's "Instruction Set" chapter, written here
// independently of codegen/prelude (a check must not share the checked code's reading of it).
//
// Values travel as raw bits in 64-bit words: an operand of type T is its low type_bits(T) bits;
// floats are IEEE bits (f16 and bf16 in the low 16). The approximate instructions (ex2, lg2, sin,
// cos, rsqrt, tanh .approx; rcp, sqrt and div .approx; div .full) return the correctly rounded result
// of the exact function, which lies inside every maximum error the ISA states for them, or, asked
// for, a worst case at the edge of that error (approximations.h); a kernel whose results depend on
// the hardware's particular approximation is outside what this checks.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "ptx/approximations.h"
#include "ptx/opcode.h"

namespace bertc::ptx {

struct Computed {
  uint64_t value = 0;
  std::optional<uint64_t> second;  // setp's second destination (the complement), when written
};

// The result of `op` on `sources` (the operand bits after the destination, in order). Throws
// std::domain_error for what the ISA leaves undefined and a kernel must not do (an integer
// division by zero), and std::invalid_argument for an instruction or form not modelled yet.
// Precondition: the host rounds to nearest (its default; Emulator::launch checks it), the mode
// directed roundings (.rz .rm .rp) are set from and restored to.
// `approximation`: how the approximate instructions' results are made (approximations.h).
Computed compute(const Opcode& op, std::span<const uint64_t> sources, const Approximation& approximation = {});

// IEEE binary16 and bfloat16 conversions, rounding to nearest even (NaN kept a NaN).
uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);
float bf16_to_f32(uint16_t b);

}  // namespace bertc::ptx
