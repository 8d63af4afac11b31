// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11) and the
// dropout mask defined with it, for host code. The definition itself is ir/philox_core.h, which
// the kernel prelude embeds, so a recomputed or GPU-drawn mask is bit-identical.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

#include "ir/philox_core.h"

namespace bertc::ir {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

constexpr PhiloxCounter philox4x32_10(PhiloxCounter c, PhiloxKey k) {
  const bertc_philox_block r = bertc_philox4x32_10({{c[0], c[1], c[2], c[3]}}, k[0], k[1]);
  return {r.word[0], r.word[1], r.word[2], r.word[3]};
}

constexpr PhiloxCounter dropout_block(uint64_t seed, uint64_t offset, uint64_t block) {
  const bertc_philox_block r = bertc_dropout_block(seed, offset, block);
  return {r.word[0], r.word[1], r.word[2], r.word[3]};
}

constexpr uint32_t dropout_draw(uint64_t seed, uint64_t offset, uint64_t index) {
  return bertc_dropout_draw(seed, offset, index);
}

// ceil(p * 2^24): the smallest kept draw.
inline uint32_t dropout_threshold(double p) { return static_cast<uint32_t>(std::ceil(p * 16777216.0)); }

inline bool dropout_keep(uint64_t seed, uint64_t offset, uint64_t index, uint32_t threshold) {
  return dropout_draw(seed, offset, index) >= threshold;
}

}  // namespace bertc::ir
