// f16 and bf16 conversions (see float16.h).
#include "ir/float16.h"

#include <cstring>

namespace bertc::ir {

uint16_t f16_bits(float x) {
  const _Float16 h = static_cast<_Float16>(x);  // round to nearest even, overflow to infinity
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

float from_f16_bits(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return static_cast<float>(h);
}

uint16_t bf16_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) u += 0x7fffu + ((u >> 16) & 1u);  // not inf or NaN: round
  else if (u & 0x007fffffu) u |= 0x00400000u;                              // NaN stays NaN (quiet)
  return static_cast<uint16_t>(u >> 16);
}

float from_bf16_bits(uint16_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

float round_to_tf32(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) return x;  // NaN (its payload may be all low bits)
  u = (u + 0x1000u) & 0xffffe000u;  // half of the 13 dropped bits carries into the kept ones: ties away
  std::memcpy(&x, &u, 4);
  return x;
}

}  // namespace bertc::ir
