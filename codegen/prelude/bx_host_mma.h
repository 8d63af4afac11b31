// The warp-level matrix instructions on the host, lane by lane as the PTX ISA lays out their
// registers ("Matrix fragments for mma.m16n8k16", "... mma.m8n8k4", "ldmatrix"): each lane hands
// its registers to the warp (bx_api->warp_gather) and computes only the elements it owns, so a
// kernel that loads a fragment into the wrong lane or register gets wrong numbers here as on a GPU.
#ifndef BX_HOST_MMA_H
#define BX_HOST_MMA_H

BX_FN int bx_lane() {
  const bx_thread_state* s = bx_api->current;
  return (s->tid[0] + s->bdim[0] * (s->tid[1] + s->bdim[1] * s->tid[2])) & 31;
}

template <bool BF16>
BX_FN float bx_b16_to_f32(bx_u32 reg, int half) {
  const bx_u16 bits = (bx_u16)(half ? reg >> 16 : reg & 0xffffu);
  return BF16 ? bx_bf16_bits_to_f32(bits) : bx_f16_bits_to_f32(bits);
}

// D = A B + C for one m16n8kK tile whose registers hold E elements each (K = 8 * E), decoded by
// `value(register, part)`: the lane and register of A[row][k] and B[k][col] follow one rule for
// m16n8k16 (E = 2) and m16n8k8 tf32 (E = 1), with k' = k / E: A's lane (row % 8) * 4 + k' % 4,
// register row / 8 + 2 * (k' / 4); B's lane col * 4 + k' % 4, register 4 + k' / 4; part k % E.
// c[e] = C[g + 8*(e/2)][2t + e%2] for lane l, g = l/4, t = l%4.
template <int E, typename Value>
BX_FN void bx_mma_m16n8(float* c, const bx_u32* a, const bx_u32* b, Value value) {
  bx_u32 mine[6] = {a[0], a[1], a[2], a[3], b[0], b[1]}, all[32][6];
  bx_api->warp_gather(bx_api->scheduler, mine, sizeof mine, all);
  const int lane = bx_lane(), g = lane >> 2, t = lane & 3;
  for (int e = 0; e < 4; ++e) {
    const int row = g + 8 * (e >> 1), col = 2 * t + (e & 1);
    float sum = c[e];
    for (int k = 0; k < 8 * E; ++k) {
      const int kr = k / E, part = k % E;
      const float x = value(all[(row & 7) * 4 + (kr & 3)][(row >> 3) + 2 * (kr >> 2)], part);
      const float y = value(all[col * 4 + (kr & 3)][4 + (kr >> 2)], part);
      sum += x * y;
    }
    c[e] = sum;
  }
}

// m16n8k16: A 16x16 row-major (4 registers of 2 halves per lane), B 16x8 column-major (2
// registers), C and D 16x8 f32: a[0] = A[g][2t..2t+1], a[1] = A[g+8][2t..], a[2] = A[g][2t+8..],
// a[3] = A[g+8][2t+8..]; b[0] = B[2t..2t+1][g], b[1] = B[2t+8..][g].
template <bool BF16>
BX_FN void bx_mma_16816(float* c, const bx_u32* a, const bx_u32* b) {
  bx_mma_m16n8<2>(c, a, b, [](bx_u32 reg, int half) { return bx_b16_to_f32<BF16>(reg, half); });
}

// f32 -> TF32 as cvt.rna.tf32.f32: round the magnitude to 10 mantissa bits, ties away from zero
// (adding half of the dropped 13 bits carries into the kept ones), low 13 bits zero; NaN stays NaN
// (a payload only in the dropped bits must not become infinity).
BX_FN bx_u32 bx_tf32_bits(float x) {
  const bx_u32 bits = bx_float_bits(x);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x7fffffu) != 0) return 0x7fffffffu;
  return (bits + 0x1000u) & 0xffffe000u;
}

// m16n8k8 of TF32 (f32 registers, low 13 bits zero): a[0] = A[g][t], a[1] = A[g+8][t],
// a[2] = A[g][t+4], a[3] = A[g+8][t+4]; b[0] = B[t][g], b[1] = B[t+4][g]. Products of TF32 values
// are exact in f32.
BX_FN void bx_mma_1688_tf32(float* c, const bx_u32* a, const bx_u32* b) {
  bx_mma_m16n8<1>(c, a, b, [](bx_u32 reg, int) { return bx_bits_float(reg); });
}

// D = A B + C for m8n8k4 (f16 in, f32 accumulate): the warp's four quad-pairs (lanes 4q..4q+3
// and 4q+16..4q+19) each compute their own 8x8x4 product. In a quad-pair, lane i (0..3 low,
// 4..7 high) holds row i of A (a: k 0..3) and column i of B (b: k 0..3), and its 8 results are
// row (l & 1) + (e & 2) + 4*high, column (e & 4) + (l & 2) + (e & 1).
BX_FN void bx_mma_884(float* c, const bx_u32* a, const bx_u32* b) {
  bx_u32 mine[4] = {a[0], a[1], b[0], b[1]}, all[32][4];
  bx_api->warp_gather(bx_api->scheduler, mine, sizeof mine, all);
  const int lane = bx_lane(), pair = (lane >> 2) & 3, high = lane >> 4;
  for (int e = 0; e < 8; ++e) {
    const int row = (lane & 1) + (e & 2) + 4 * high, col = (e & 4) + (lane & 2) + (e & 1);
    const int a_lane = 4 * pair + (row & 3) + 16 * (row >> 2), b_lane = 4 * pair + (col & 3) + 16 * (col >> 2);
    float sum = c[e];
    for (int k = 0; k < 4; ++k)
      sum += bx_b16_to_f32<false>(all[a_lane][k >> 1], k & 1) * bx_b16_to_f32<false>(all[b_lane][2 + (k >> 1)], k & 1);
    c[e] = sum;
  }
}

// ldmatrix .x4 (.trans): lanes 8j..8j+7 give the row addresses of 8x8 b16 matrix j; register j of
// lane l gets row l/4, columns 2(l%4) and 2(l%4)+1 of matrix j (of its transpose with TRANS).
template <bool TRANS>
BX_FN void bx_ldmatrix_x4(bx_u32* r, const void* row) {
  const bx_u16* rows[32];
  const bx_u16* mine = static_cast<const bx_u16*>(row);
  bx_api->check_shared(bx_api->scheduler, "an ldmatrix row (8 b16 elements)", row, 16);
  bx_api->warp_gather(bx_api->scheduler, &mine, sizeof mine, rows);
  const int lane = bx_lane(), g = lane >> 2, t = lane & 3;
  for (int j = 0; j < 4; ++j) {
    const bx_u16 lo = TRANS ? rows[8 * j + 2 * t][g] : rows[8 * j + g][2 * t];
    const bx_u16 hi = TRANS ? rows[8 * j + 2 * t + 1][g] : rows[8 * j + g][2 * t + 1];
    r[j] = (bx_u32)lo | ((bx_u32)hi << 16);
  }
}

// cp.async of BYTES (4, 8 or 16) from global src to shared dst, zeros where !valid.
template <int BYTES>
BX_FN void bx_cp_async(void* dst, const void* src, bool valid) {
  bx_api->cp_async(bx_api->scheduler, dst, valid ? src : nullptr, BYTES);
}
BX_FN void bx_cp_async_commit() { bx_api->cp_async_commit(bx_api->scheduler); }
template <int PENDING>
BX_FN void bx_cp_async_wait() { bx_api->cp_async_wait(bx_api->scheduler, PENDING); }

#endif  // BX_HOST_MMA_H
