// Philox4x32-10 and the dropout draw in the subset of C++ that NVRTC and host compilers share
// (no headers, no std types). ir/philox.h wraps it for host code and the kernel prelude embeds
// this very file, so the CPU reference and every generated kernel draw identical bits.
#ifndef BERTC_IR_PHILOX_CORE_H
#define BERTC_IR_PHILOX_CORE_H

#ifndef BERTC_HD  // __host__ __device__ where the includer compiles device code
#define BERTC_HD
#endif

struct bertc_philox_block {
  unsigned int word[4];
};

// Ten rounds of Philox4x32 (Salmon et al., SC'11) on counter c under key (k0, k1).
BERTC_HD constexpr bertc_philox_block bertc_philox4x32_10(bertc_philox_block c, unsigned int k0, unsigned int k1) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;  // Weyl key increments
      k1 += 0xBB67AE85u;
    }
    const unsigned long long p0 = 0xD2511F53ull * c.word[0], p1 = 0xCD9E8D57ull * c.word[2];  // round multipliers
    c = {{static_cast<unsigned int>(p1 >> 32) ^ c.word[1] ^ k0, static_cast<unsigned int>(p1),
          static_cast<unsigned int>(p0 >> 32) ^ c.word[3] ^ k1, static_cast<unsigned int>(p0)}};
  }
  return c;
}

// The Philox block behind elements 4*block .. 4*block+3 of the dropout op with `offset`, under
// the step's `seed`.
BERTC_HD constexpr bertc_philox_block bertc_dropout_block(unsigned long long seed, unsigned long long offset,
                                                          unsigned long long block) {
  return bertc_philox4x32_10({{static_cast<unsigned int>(block), static_cast<unsigned int>(block >> 32),
                               static_cast<unsigned int>(offset), 0u}},
                             static_cast<unsigned int>(seed), static_cast<unsigned int>(seed >> 32));
}

// The 24-bit draw of element `index`: word index % 4 of its block, top 24 bits. An element is
// kept when draw >= ceil(p * 2^24): an integer comparison, so host and device agree exactly.
BERTC_HD constexpr unsigned int bertc_dropout_draw(unsigned long long seed, unsigned long long offset,
                                                   unsigned long long index) {
  const bertc_philox_block b = bertc_dropout_block(seed, offset, index >> 2);
  // Selected, not indexed: a word picked by a run-time index would put the block in a GPU
  // thread's local memory (slow) instead of its registers.
  const unsigned int i = static_cast<unsigned int>(index & 3);
  return (i == 0 ? b.word[0] : i == 1 ? b.word[1] : i == 2 ? b.word[2] : b.word[3]) >> 8;
}

#endif  // BERTC_IR_PHILOX_CORE_H
