// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11) and the
// dropout mask defined with it. The CPU reference and every generated kernel draw masks with
// exactly this definition, so a recomputed or GPU-drawn mask is bit-identical.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

namespace bertc::ir {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

constexpr PhiloxCounter philox4x32_10(PhiloxCounter c, PhiloxKey k) {
  constexpr uint64_t kM0 = 0xD2511F53, kM1 = 0xCD9E8D57;  // round multipliers
  constexpr uint32_t kW0 = 0x9E3779B9, kW1 = 0xBB67AE85;  // Weyl key increments
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += kW0;
      k[1] += kW1;
    }
    const uint64_t p0 = kM0 * c[0], p1 = kM1 * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
  }
  return c;
}

// The Philox block behind elements 4*block .. 4*block+3 of the dropout op with `offset`, under
// the step's `seed`.
constexpr PhiloxCounter dropout_block(uint64_t seed, uint64_t offset, uint64_t block) {
  return philox4x32_10({static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), static_cast<uint32_t>(offset), 0},
                       {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
}

// The 24-bit draw of element `index`: word index % 4 of its block, top 24 bits.
constexpr uint32_t dropout_draw(uint64_t seed, uint64_t offset, uint64_t index) {
  return dropout_block(seed, offset, index >> 2)[index & 3] >> 8;
}

// An element is kept when draw / 2^24 >= p, i.e. draw >= ceil(p * 2^24): an integer comparison, so
// host and device agree exactly whatever their floating point.
inline uint32_t dropout_threshold(double p) { return static_cast<uint32_t>(std::ceil(p * 16777216.0)); }

inline bool dropout_keep(uint64_t seed, uint64_t offset, uint64_t index, uint32_t threshold) {
  return dropout_draw(seed, offset, index) >= threshold;
}

}  // namespace bertc::ir
