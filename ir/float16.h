// The 16-bit float formats on the host: IEEE half (f16) and bfloat16 bits to and from float,
// rounding to nearest even (NaN stays NaN, f16 overflows to infinity), and TF32 rounding. The one host-side copy;
// kernels have theirs in the prelude (bx_common.h), tested bit-exact against this one.
#pragma once

#include <cstdint>

namespace bertc::ir {

uint16_t f16_bits(float x);
float from_f16_bits(uint16_t bits);
uint16_t bf16_bits(float x);
float from_bf16_bits(uint16_t bits);
// x rounded to TF32 (10 mantissa bits) as cvt.rna.tf32.f32 does: to nearest, ties away from zero;
// NaN stays NaN. What tensor cores multiply under precision tf32 (the prelude's bx_tf32_bits).
float round_to_tf32(float x);

}  // namespace bertc::ir
