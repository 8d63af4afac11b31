// The matrix kernels' building blocks, one text for every architecture: a strategy is a warp's way
// to multiply tiles held in shared memory (bx_simt: FP32 FFMA register tiles; bx_hmma884:
// mma.m8n8k4; bx_hmma16816: ldmatrix + mma.m16n8k16), and everything else (tile loads, the
// pipelined GEMM main loop, fused attention) is written once over the strategy. Tile sizes,
// stages and layouts are template parameters the renderer picks; nothing here is per-arch text.
#ifndef BX_MATRIX_H
#define BX_MATRIX_H

template <typename T> constexpr bool bx_is_bf16 = false;
template <> constexpr bool bx_is_bf16<bx_bf16> = true;

BX_FN bx_u16 bx_bits16(const bx_f16& x) { return x.bits; }
BX_FN bx_u16 bx_bits16(const bx_bf16& x) { return x.bits; }
BX_FN bx_u32 bx_pack16(bx_u16 lo, bx_u16 hi) { return (bx_u32)lo | ((bx_u32)hi << 16); }

// Shared-memory rows are padded by 16 bytes: rows stay 16-byte aligned (vector stores, ldmatrix)
// and consecutive rows start 4 banks apart, so column reads and ldmatrix are conflict-free.
template <typename T> constexpr int bx_pad = 16 / (int)sizeof(T);

// Copies the ROWS x COLS tile at (r0, c0) of a row-major global matrix (rows x cols valid,
// leading dimension ld) into shared memory (leading dimension LDS), zeros outside, in chunks of
// VEC elements (VEC divides cols, so a chunk is all inside or all outside). ASYNC: cp.async,
// landing at the next wait; else through registers: `issue` loads, `land` stores, so the loads
// are in flight during whatever the caller does in between.
template <typename T, int ROWS, int COLS, int LDS, int VEC, int THREADS, bool ASYNC>
struct bx_tile_loader {
  static_assert(COLS % VEC == 0, "a tile row is whole chunks");
  static constexpr int PER_ROW = COLS / VEC, CHUNKS = ROWS * PER_ROW, EACH = (CHUNKS + THREADS - 1) / THREADS;
  typedef bx_vec<T, VEC> chunk;
  chunk staged[ASYNC ? 1 : EACH];

  BX_MEMBER void issue(T* smem, const T* g, bx_i64 ld, int rows, int cols, int r0, int c0) {
    for (int i = 0; i < EACH; ++i) {
      const int at = bx_tid_x() + i * THREADS;
      if (CHUNKS % THREADS != 0 && at >= CHUNKS) break;
      const int r = at / PER_ROW, c = at % PER_ROW * VEC;
      const bool valid = r0 + r < rows && c0 + c < cols;
      const T* src = valid ? g + (bx_i64)(r0 + r) * ld + c0 + c : g;
      if constexpr (ASYNC && sizeof(chunk) >= 4) {
        bx_cp_async<(int)sizeof(chunk)>(smem + r * LDS + c, src, valid);
      } else if constexpr (ASYNC) {  // 2-byte chunks: cp.async copies 4 bytes at least
        chunk v = {};
        if (valid) v = *(const chunk*)src;
        *(chunk*)(smem + r * LDS + c) = v;
      } else {
        staged[i] = chunk{};
        if (valid) staged[i] = *(const chunk*)src;
      }
    }
  }

  BX_MEMBER void land(T* smem) {
    if constexpr (!ASYNC)
      for (int i = 0; i < EACH; ++i) {
        const int at = bx_tid_x() + i * THREADS;
        if (CHUNKS % THREADS != 0 && at >= CHUNKS) break;
        *(chunk*)(smem + at / PER_ROW * LDS + at % PER_ROW * VEC) = staged[i];
      }
  }
};

// --- Warp strategies. Each: a warp's WM x WN accumulator (ACC floats per lane), coord() (the tile
// element accumulator i of `lane` holds) and mma() (acc += A B over KLEN, a multiple of KSTEP).
// A is WM x KLEN, stored [m][k] when A_KC (k contiguous) else [k][m]; B is KLEN x WN, stored [n][k]
// when B_KC else [k][n]; lda, ldb are the shared-memory leading dimensions, multiples of 4, and A, B
// start 4 elements aligned (tiles padded by 16 bytes are). The layouts are the strategy's template
// arguments because simt's element ownership (coord) depends on them.

// FP32 FFMA on a TM x TN register tile per lane; lanes form a 4 x 8 grid. Shared-memory reads are
// 4 elements wide (ld.shared.v4 for f32), so a lane's 8 x 8 tile costs 16 loads per 4 k-steps and
// 256 FFMA (16 per load, against 4 with scalar loads):
//  - an operand stored [k][m] (or [k][n]): a lane owns runs of 4 consecutive rows (columns) and
//    reads a run at one k in one load; a quarter-warp's runs are distinct and adjacent, or the same
//    (broadcast), so no bank conflicts;
//  - an operand stored k-contiguous: a lane reads 4 k at once for each of its rows, which are
//    interleaved (lane row + 4 i, lane column + 8 j): a quarter-warp reads 8 consecutive rows of a
//    padded tile (20 floats = 4 banks apart) or one row (broadcast), so again no bank conflicts.
// 16-bit inputs are only storage: converted on load, never computed in half.
template <int WM, int WN, bool A_KC, bool B_KC>
struct bx_simt {
  static constexpr int LM = 4, LN = 8, TM = WM / LM, TN = WN / LN, ACC = TM * TN, KSTEP = 1;
  static_assert(WM % LM == 0 && WN % LN == 0, "SIMT warp tiles are multiples of 4 x 8");
  // Run lengths: 4 (or what divides the lane's tile) along an operand stored [k][m|n], else 1.
  static constexpr int run(int t) { return t % 4 == 0 ? 4 : t % 2 == 0 ? 2 : 1; }
  static constexpr int VM = A_KC ? 1 : run(TM), VN = B_KC ? 1 : run(TN);
  // The lane's i-th row (of TM) and j-th column (of TN) in the warp tile.
  BX_STATIC int row(int lane, int i) { return (i / VM * LM + lane / LN) * VM + i % VM; }
  BX_STATIC int col(int lane, int j) { return (j / VN * LN + lane % LN) * VN + j % VN; }
  BX_STATIC void coord(int i, int lane, int& r, int& c) {
    r = row(lane, i / TN);
    c = col(lane, i % TN);
  }
  // x[kk][i] = the lane's i-th element (of N, runs of V) of an operand at k0 + kk, kk < KV.
  template <typename T, bool KC, int N, int V, int KV, int L>
  BX_STATIC void fetch(float (&x)[KV][N], const T* P, int ld, int k0, int lane_at) {
    if constexpr (KC) {
      BX_UNROLL
      for (int i = 0; i < N; ++i) {
        float v[KV];
        bx_ldv<KV>(P, (i * L + lane_at) * ld + k0, v);
        BX_UNROLL
        for (int kk = 0; kk < KV; ++kk) x[kk][i] = v[kk];
      }
    } else {
      BX_UNROLL
      for (int kk = 0; kk < KV; ++kk)
        BX_UNROLL
        for (int g = 0; g < N / V; ++g) bx_ldv<V>(P, (k0 + kk) * ld + (g * L + lane_at) * V, &x[kk][g * V]);
    }
  }
  template <typename T, int KLEN>
  BX_STATIC void mma(float* acc, const T* A, int lda, const T* B, int ldb) {
    // k-contiguous operands are read 4 k at a time (KLEN permitting); the others a k at a time.
    constexpr int KV = (A_KC || B_KC) && KLEN % 4 == 0 ? 4 : 1;
    const int lane = bx_lane();
    for (int k0 = 0; k0 < KLEN; k0 += KV) {
      float a[KV][TM], b[KV][TN];
      fetch<T, A_KC, TM, VM, KV, LM>(a, A, lda, k0, lane / LN);
      fetch<T, B_KC, TN, VN, KV, LN>(b, B, ldb, k0, lane % LN);
      BX_UNROLL
      for (int kk = 0; kk < KV; ++kk)
        BX_UNROLL
        for (int i = 0; i < TM; ++i)
          BX_UNROLL
          for (int j = 0; j < TN; ++j) acc[i * TN + j] += a[kk][i] * b[kk][j];
    }
  }
};

// mma.m8n8k4 (sm_70): a warp's four quad-pairs make one 16 x 16 x 4 step (pair p: rows 8(p&1),
// columns 8(p>>1)); fragments are read from shared memory element by element (no ldmatrix).
template <int WM, int WN, bool A_KC, bool B_KC>
struct bx_hmma884 {
  static constexpr int MI = WM / 16, NJ = WN / 16, ACC = MI * NJ * 8, KSTEP = 4;
  static_assert(WM % 16 == 0 && WN % 16 == 0, "m8n8k4 warp tiles are multiples of 16 x 16");
  BX_STATIC void coord(int i, int lane, int& r, int& c) {
    const int piece = i / 8, e = i % 8, pair = (lane >> 2) & 3, high = lane >> 4;
    r = piece / NJ * 16 + (pair & 1) * 8 + (lane & 1) + (e & 2) + 4 * high;
    c = piece % NJ * 16 + (pair >> 1) * 8 + (e & 4) + (lane & 2) + (e & 1);
  }
  template <typename T, int KLEN>
  BX_STATIC void mma(float* acc, const T* A, int lda, const T* B, int ldb) {
    static_assert(sizeof(T) == 2 && !bx_is_bf16<T>, "m8n8k4 takes f16");
    const int lane = bx_lane(), pair = (lane >> 2) & 3, own = (lane & 3) + 4 * (lane >> 4);
    // Rolled: unrolled, ptxas hoisted every k step's fragment loads and the attention backward
    // needed 242 registers (152 bytes of spills at 3 blocks an SM); rolled it needs 112.
    BX_ROLLED
    for (int k0 = 0; k0 < KLEN; k0 += 4) {
      bx_u32 a[MI][2], b[NJ][2];
      for (int mi = 0; mi < MI; ++mi) {
        const int m = mi * 16 + (pair & 1) * 8 + own;
        bx_u16 x[4];
        for (int k = 0; k < 4; ++k) x[k] = bx_bits16(A[A_KC ? m * lda + k0 + k : (k0 + k) * lda + m]);
        a[mi][0] = bx_pack16(x[0], x[1]);
        a[mi][1] = bx_pack16(x[2], x[3]);
      }
      for (int nj = 0; nj < NJ; ++nj) {
        const int n = nj * 16 + (pair >> 1) * 8 + own;
        bx_u16 x[4];
        for (int k = 0; k < 4; ++k) x[k] = bx_bits16(B[B_KC ? n * ldb + k0 + k : (k0 + k) * ldb + n]);
        b[nj][0] = bx_pack16(x[0], x[1]);
        b[nj][1] = bx_pack16(x[2], x[3]);
      }
      for (int mi = 0; mi < MI; ++mi)
        for (int nj = 0; nj < NJ; ++nj) bx_mma_884(acc + (mi * NJ + nj) * 8, a[mi], b[nj]);
    }
  }
};

// mma.m16n8k16 (sm_80+; two m16n8k8 on sm_75) with ldmatrix: k-contiguous tiles load with
// ldmatrix, the others with ldmatrix.trans, so no layout needs a transposing copy.
template <int WM, int WN, bool A_KC, bool B_KC>
struct bx_hmma16816 {
  static constexpr int MI = WM / 16, NI = WN / 8, ACC = MI * NI * 4, KSTEP = 16;
  static_assert(WM % 16 == 0 && WN % 16 == 0, "m16n8k16 warp tiles are multiples of 16 x 16");
  BX_STATIC void coord(int i, int lane, int& r, int& c) {
    const int e = i % 4;
    r = i / (NI * 4) * 16 + lane / 4 + (e >> 1) * 8;
    c = i / 4 % NI * 8 + lane % 4 * 2 + (e & 1);
  }
  template <typename T, int KLEN>
  BX_STATIC void mma(float* acc, const T* A, int lda, const T* B, int ldb) {
    static_assert(sizeof(T) == 2, "m16n8k16 takes f16 or bf16");
    // Lane l addresses row l % 8 of 8x8 matrix l / 8.
    const int lane = bx_lane(), j = lane >> 3, r = lane & 7;
    for (int k0 = 0; k0 < KLEN; k0 += 16) {
      bx_u32 a[MI][4], b[NI][2];
      for (int mi = 0; mi < MI; ++mi)
        bx_ldmatrix_x4<!A_KC>(a[mi], A_KC ? A + (mi * 16 + r + (j & 1) * 8) * lda + k0 + (j >> 1) * 8
                                           : A + (k0 + r + (j >> 1) * 8) * lda + mi * 16 + (j & 1) * 8);
      for (int ni = 0; ni < NI; ni += 2) {
        bx_u32 t[4];
        bx_ldmatrix_x4<!B_KC>(t, B_KC ? B + (ni * 8 + r + (j >> 1) * 8) * ldb + k0 + (j & 1) * 8
                                       : B + (k0 + r + (j & 1) * 8) * ldb + ni * 8 + (j >> 1) * 8);
        b[ni][0] = t[0], b[ni][1] = t[1], b[ni + 1][0] = t[2], b[ni + 1][1] = t[3];
      }
      for (int mi = 0; mi < MI; ++mi)
        for (int ni = 0; ni < NI; ++ni) bx_mma_16816<bx_is_bf16<T>>(acc + (mi * NI + ni) * 4, a[mi], b[ni]);
    }
  }
};

// mma.m16n8k8 with TF32 inputs (sm_80+; precision tf32): f32 tiles in shared memory, each element
// rounded to TF32 (10-bit mantissa, to nearest, ties away: cvt.rna) as its fragment is read, and
// f32 accumulation. The accumulator layout is m16n8k16's. Fragments are read element by element:
// lane l (g = l/4, t = l%4) takes A[g][t], A[g+8][t], A[g][t+4], A[g+8][t+4] and B[t][g], B[t+4][g].
template <int WM, int WN, bool A_KC, bool B_KC>
struct bx_tf32 {
  static constexpr int MI = WM / 16, NI = WN / 8, ACC = MI * NI * 4, KSTEP = 8;
  static_assert(WM % 16 == 0 && WN % 16 == 0, "m16n8k8 warp tiles are multiples of 16 x 16");
  BX_STATIC void coord(int i, int lane, int& r, int& c) { bx_hmma16816<WM, WN, A_KC, B_KC>::coord(i, lane, r, c); }
  template <typename T, int KLEN>
  BX_STATIC void mma(float* acc, const T* A, int lda, const T* B, int ldb) {
    static_assert(sizeof(T) == 4, "tf32 products take f32 tiles");
    const int lane = bx_lane(), g = lane >> 2, t = lane & 3;
    for (int k0 = 0; k0 < KLEN; k0 += 8) {
      bx_u32 a[MI][4], b[NI][2];
      BX_UNROLL
      for (int mi = 0; mi < MI; ++mi)
        BX_UNROLL
        for (int r = 0; r < 4; ++r) {
          const int m = mi * 16 + g + (r & 1) * 8, k = k0 + t + (r >> 1) * 4;
          a[mi][r] = bx_tf32_bits(A[A_KC ? m * lda + k : k * lda + m]);
        }
      BX_UNROLL
      for (int ni = 0; ni < NI; ++ni)
        BX_UNROLL
        for (int r = 0; r < 2; ++r) {
          const int n = ni * 8 + g, k = k0 + t + r * 4;
          b[ni][r] = bx_tf32_bits(B[B_KC ? n * ldb + k : k * ldb + n]);
        }
      BX_UNROLL
      for (int mi = 0; mi < MI; ++mi)
        BX_UNROLL
        for (int ni = 0; ni < NI; ++ni) bx_mma_1688_tf32(acc + (mi * NI + ni) * 4, a[mi], b[ni]);
    }
  }
};

// A PM x PN product over the block's warps, arranged WGM x WGN (warp w at row w / WGN), of operands
// laid out as A_KC, B_KC say (see the warp strategies).
template <template <int, int, bool, bool> class S, int PM, int PN, int WGM, int WGN, bool A_KC, bool B_KC>
struct bx_block_mma {
  static constexpr int WM = PM / WGM, WN = PN / WGN;
  typedef S<WM, WN, A_KC, B_KC> warp;
  static constexpr int ACC = warp::ACC;
  BX_STATIC int warp_row() { return (bx_tid_x() >> 5) / WGN * WM; }
  BX_STATIC int warp_col() { return (bx_tid_x() >> 5) % WGN * WN; }
  BX_STATIC void zero(float* acc) {
    BX_UNROLL
    for (int i = 0; i < ACC; ++i) acc[i] = 0.0f;
  }
  template <typename T, int KLEN>
  BX_STATIC void mma(float* acc, const T* A, int lda, const T* B, int ldb) {
    static_assert(KLEN % warp::KSTEP == 0, "the product's depth is whole instruction steps");
    const int m = warp_row(), n = warp_col();
    warp::template mma<T, KLEN>(acc, A_KC ? A + m * lda : A + m, lda, B_KC ? B + n * ldb : B + n, ldb);
  }
  BX_STATIC void coord(int i, int& r, int& c) {
    warp::coord(i, bx_lane(), r, c);
    r += warp_row();
    c += warp_col();
  }
};

// The GEMM main loop: acc += A[m0 .. m0+BM, :] B[:, n0 .. n0+BN] through a ring of STAGES
// shared-memory stages (ASYNC: cp.async groups, STAGES-1 tiles in flight; else register-staged
// loads overlapping one tile's math). A is M x K, stored row-major with leading dimension lda
// when A_KC, else as its K x M transpose; B is K x N, stored as its N x K transpose when B_KC.
template <template <int, int, bool, bool> class S, typename T, int BM, int BN, int BK, int WGM, int WGN, int STAGES, bool A_KC,
          bool B_KC, int VA, int VB, bool ASYNC>
struct bx_gemm {
  typedef bx_block_mma<S, BM, BN, WGM, WGN, A_KC, B_KC> product;
  static constexpr int THREADS = WGM * WGN * 32, ACC = product::ACC;
  static constexpr int LDA = (A_KC ? BK : BM) + bx_pad<T>, A_TILE = (A_KC ? BM : BK) * LDA;
  static constexpr int LDB = (B_KC ? BK : BN) + bx_pad<T>, B_TILE = (B_KC ? BN : BK) * LDB;
  static constexpr int SMEM = STAGES * (A_TILE + B_TILE);  // elements of T
  static_assert(STAGES >= 2, "a ring of at least two stages");

  BX_STATIC void run(float* acc, T* smem, const T* A, bx_i64 lda, const T* B, bx_i64 ldb, int M, int N, int K,
                        int m0, int n0) {
    bx_tile_loader<T, A_KC ? BM : BK, A_KC ? BK : BM, LDA, VA, THREADS, ASYNC> load_a;
    bx_tile_loader<T, B_KC ? BN : BK, B_KC ? BK : BN, LDB, VB, THREADS, ASYNC> load_b;
    T* As = smem;
    T* Bs = smem + STAGES * A_TILE;
    const int tiles = (K + BK - 1) / BK;
    auto issue = [&](int t) {
      T* a = As + t % STAGES * A_TILE;
      T* b = Bs + t % STAGES * B_TILE;
      if (A_KC) load_a.issue(a, A, lda, M, K, m0, t * BK);
      else load_a.issue(a, A, lda, K, M, t * BK, m0);
      if (B_KC) load_b.issue(b, B, ldb, N, K, n0, t * BK);
      else load_b.issue(b, B, ldb, K, N, t * BK, n0);
    };
    auto land = [&](int t) {
      load_a.land(As + t % STAGES * A_TILE);
      load_b.land(Bs + t % STAGES * B_TILE);
    };
    product::zero(acc);
    for (int t = 0; t < STAGES - 1; ++t) {
      if (t < tiles) issue(t), land(t);
      if constexpr (ASYNC) bx_cp_async_commit();
    }
    for (int t = 0; t < tiles; ++t) {
      if constexpr (ASYNC) bx_cp_async_wait<STAGES - 2>();
      bx_sync();  // tile t is in; every warp is done with the stage the next issue overwrites
      const int next = t + STAGES - 1;
      if (next < tiles) issue(next);
      product::template mma<T, BK>(acc, As + t % STAGES * A_TILE, LDA, Bs + t % STAGES * B_TILE, LDB);
      if (next < tiles) land(next);
      if constexpr (ASYNC) bx_cp_async_commit();
    }
  }
};

// Where the rows of one (batch, head) of attention's q, k, v or out lie: row i of head bh at
// (bh / heads) * batch + (bh % heads) * head + i * row elements from the tensor's start (head dims
// contiguous). [B,h,S,d] tensors: (h S d, S d, d); a packed [B,S,3,h,d] projection: (3 S h d, d,
// 3 h d) from q's, k's or v's first element.
struct bx_rows {
  bx_i64 batch, head, row;
};

// --- Fused attention (flash-attention style): softmax(q k^T * scale + bias) with dropout, times v,
// tile by tile; no [seq x seq] matrix leaves shared memory. One block per (batch*head, query tile)
// forward; backward, the first blocks each own a key tile (dK, dV over all queries) and the rest a
// query tile (dQ over all keys), so no block adds into another's result and nothing is atomic.
// Probabilities are recomputed from the saved logsumexp; dropout redraws the forward's Philox mask.
struct bx_attention_problem {
  int batch_heads, heads, sq, sk;
  bx_rows q, kv, o;  // q (and dq); k and v (dk, dv); out (dout)
  bx_i64 bias_b, bias_h, bias_q, bias_k;  // the bias's strides over (batch, head, query, key); 0 broadcasts
  float scale;
  bool dropout;
  bx_i64 offset;       // the op's dropout offset
  bx_u32 threshold;    // keep when the Philox draw is below it
  float keep_scale;    // 1 / (1 - p)
  // Rows of several examples: each token's example [batch][sq], rising along a row (sq = sk), a
  // query attending to its own example's keys alone; 0: to every key.
  const int* ids;
};

// D: head size; BQ x BKV: the query and key tiles; SG, OG, KG: warp rows of the score (BQ x BKV),
// query-side (BQ x D) and key-side (BKV x D) products (the block's 4 warps are SG x 4/SG, ...).
template <template <int, int, bool, bool> class S, typename T, typename TB, int D, int BQ, int BKV, int SG, int OG, int KG, bool ASYNC>
struct bx_attention {
  static constexpr int THREADS = 128, WARPS = 4;
  static constexpr int LDH = D + bx_pad<T>, LDS = BKV + 1, LDP = BKV + bx_pad<T>;
  static constexpr int VEC = D % (16 / (int)sizeof(T)) == 0 ? 16 / (int)sizeof(T) : 1;
  typedef bx_block_mma<S, BQ, BKV, SG, WARPS / SG, true, true> scores;       // Q K^T, dO V^T
  typedef bx_block_mma<S, BQ, D, OG, WARPS / OG, true, false> query_side;   // P V, dS K
  typedef bx_block_mma<S, BKV, D, KG, WARPS / KG, false, false> key_side;  // Pd^T dO, dS^T Q
  // Shared memory: T elements and floats, forward and backward.
  static constexpr int FORWARD_H = (BQ + 2 * BKV) * LDH + BQ * LDP, FORWARD_F = BQ * LDS + 3 * BQ;
  static constexpr int BACKWARD_H = 2 * (BQ + BKV) * LDH + 2 * BQ * LDP, BACKWARD_F = 2 * BQ * LDS + 2 * BQ;

  // Rows row0.. of a [rows][D] matrix whose rows are `ld` apart into a [ROWS][LDH] tile (zeros
  // past `rows`).
  template <int ROWS>
  BX_STATIC void load(T* tile, const T* g, bx_i64 ld, int rows, int row0) {
    bx_tile_loader<T, ROWS, D, LDH, VEC, THREADS, ASYNC> l;
    l.issue(tile, g, ld, rows, D, row0, 0);
    l.land(tile);
  }
  // The first element of head bh's rows.
  BX_STATIC bx_i64 head_at(const bx_rows& r, const bx_attention_problem& a, int bh) {
    return (bx_i64)(bh / a.heads) * r.batch + (bx_i64)(bh % a.heads) * r.head;
  }
  BX_STATIC void loads_done() {
    if constexpr (ASYNC) {
      bx_cp_async_commit();
      bx_cp_async_wait<0>();
    }
    bx_sync();
  }
  BX_STATIC float bias_at(const TB* bias, const bx_attention_problem& a, int bh, int i, int j) {
    return bx_ld(bias, (bh / a.heads) * a.bias_b + (bh % a.heads) * a.bias_h + i * a.bias_q + j * a.bias_k);
  }
  // Whether queries [q0, q0 + BQ) and keys [k0, k0 + BKV) of head bh may share an example: the
  // ids rise along a row, so a query and a key share one only where the tiles' ranges of ids
  // overlap. A pair whose ranges do not is skipped whole (the same answer in every thread of the
  // block); one that overlaps is computed, its scores between two examples left out.
  BX_STATIC bool tiles_meet(const bx_attention_problem& a, int bh, int q0, int k0) {
    if (!a.ids) return true;
    const int* row = a.ids + (bx_i64)(bh / a.heads) * a.sq;
    const int q_last = q0 + BQ < a.sq ? q0 + BQ - 1 : a.sq - 1, k_last = k0 + BKV < a.sk ? k0 + BKV - 1 : a.sk - 1;
    return row[q0] <= row[k_last] && row[k0] <= row[q_last];
  }
  BX_STATIC bool same_example(const bx_attention_problem& a, int bh, int i, int j) {
    if (!a.ids) return true;
    const int* row = a.ids + (bx_i64)(bh / a.heads) * a.sq;
    return row[i] == row[j];
  }
  BX_STATIC float keep(const bx_attention_problem& a, bx_i64 seed, int bh, int i, int j) {
    if (!a.dropout) return 1.0f;
    return bx_dropout_keep(seed, a.offset, ((bx_i64)bh * a.sq + i) * a.sk + j, a.threshold) ? a.keep_scale : 0.0f;
  }

  BX_STATIC void forward(const T* q, const T* k, const T* v, const TB* bias, const bx_i64* seed, T* out, float* lse,
                            const bx_attention_problem& a, T* sh, float* sf) {
    const int q_tiles = (a.sq + BQ - 1) / BQ, bh = bx_bid_x() / q_tiles, q0 = bx_bid_x() % q_tiles * BQ;
    const int warp = bx_tid_x() >> 5, lane = bx_lane();
    const bx_i64 base_q = head_at(a.q, a, bh), base_k = head_at(a.kv, a, bh), base_o = head_at(a.o, a, bh);
    const bx_i64 seed_value = a.dropout ? *seed : 0;
    T* Qs = sh;
    T* Ks = Qs + BQ * LDH;
    T* Vs = Ks + BKV * LDH;
    T* Ps = Vs + BKV * LDH;
    float* Ss = sf;
    float* row_max = Ss + BQ * LDS;
    float* row_sum = row_max + BQ;
    float* row_scale = row_sum + BQ;
    load<BQ>(Qs, q + base_q, a.q.row, a.sq, q0);
    for (int r = bx_tid_x(); r < BQ; r += THREADS) row_max[r] = -bx_inf(), row_sum[r] = 0.0f;
    float o[query_side::ACC];
    query_side::zero(o);
    for (int k0 = 0; k0 < a.sk; k0 += BKV) {
      if (!tiles_meet(a, bh, q0, k0)) continue;  // (every score of the tile left out)
      load<BKV>(Ks, k + base_k, a.kv.row, a.sk, k0);
      load<BKV>(Vs, v + base_k, a.kv.row, a.sk, k0);
      loads_done();
      float s[scores::ACC];
      scores::zero(s);
      scores::template mma<T, D>(s, Qs, LDH, Ks, LDH);
      BX_UNROLL
      for (int i = 0; i < scores::ACC; ++i) {
        int r, c;
        scores::coord(i, r, c);
        // (A padded query row of the last tile has no bias row: a [B,h,S,S] bias ends before it.
        // A key of another example than its query's is left out as a key past the end is.)
        const bool row = q0 + r < a.sq;
        Ss[r * LDS + c] = k0 + c < a.sk && (!row || same_example(a, bh, q0 + r, k0 + c))
                              ? s[i] * a.scale + (row ? bias_at(bias, a, bh, q0 + r, k0 + c) : 0.0f)
                              : -bx_inf();
      }
      bx_sync();
      // The running softmax, a warp per row: new maximum, rescale of what was summed, this tile's
      // probabilities (dropped out) for the P V product.
      for (int r = warp; r < BQ; r += WARPS) {
        float tile_max = -bx_inf();
        for (int c = lane; c < BKV; c += 32) tile_max = bx_fmax(tile_max, Ss[r * LDS + c]);
        tile_max = bx_warp_max(tile_max);
        const float old_max = row_max[r], new_max = bx_fmax(old_max, tile_max);
        const float base = new_max == -bx_inf() ? 0.0f : new_max;  // a row with nothing finite yet
        float sum = 0.0f;
        for (int c = lane; c < BKV; c += 32) {
          const float p = bx_exp(Ss[r * LDS + c] - base);
          sum += p;
          bx_st(Ps, r * LDP + c, p * keep(a, seed_value, bh, q0 + r, k0 + c));
        }
        sum = bx_warp_sum(sum);
        // Every lane read row_max[r] above; lane 0 overwrites it (compute-sanitizer's racecheck
        // found this hazard on an H200: the shuffles order no shared-memory accesses).
        bx_syncwarp();
        if (lane == 0) {
          const float rescale = bx_exp(old_max - base);
          row_scale[r] = rescale;
          row_sum[r] = row_sum[r] * rescale + sum;
          row_max[r] = new_max;
        }
      }
      bx_sync();
      BX_UNROLL
      for (int i = 0; i < query_side::ACC; ++i) {
        int r, c;
        query_side::coord(i, r, c);
        o[i] *= row_scale[r];
      }
      query_side::template mma<T, BKV>(o, Ps, LDP, Vs, LDH);
      bx_sync();  // the next tile overwrites Ks, Vs, Ss and Ps
    }
    BX_UNROLL
    for (int i = 0; i < query_side::ACC; ++i) {
      int r, c;
      query_side::coord(i, r, c);
      if (q0 + r < a.sq) bx_st(out, base_o + (bx_i64)(q0 + r) * a.o.row + c, o[i] / row_sum[r]);
    }
    for (int r = bx_tid_x(); r < BQ; r += THREADS)
      if (q0 + r < a.sq) lse[(bx_i64)bh * a.sq + q0 + r] = row_max[r] + bx_log(row_sum[r]);
  }

  struct backward_tiles {
    T *Qs, *dOs, *Ks, *Vs, *Pd, *dS;
    float *Ss, *dPs, *Drow, *Lrow;
  };
  BX_STATIC backward_tiles tiles_of(T* sh, float* sf) {
    backward_tiles t;
    t.Qs = sh, t.dOs = t.Qs + BQ * LDH, t.Ks = t.dOs + BQ * LDH, t.Vs = t.Ks + BKV * LDH;
    t.Pd = t.Vs + BKV * LDH, t.dS = t.Pd + BQ * LDP;
    t.Ss = sf, t.dPs = t.Ss + BQ * LDS, t.Drow = t.dPs + BQ * LDS, t.Lrow = t.Drow + BQ;
    return t;
  }

  // Loads the query tile's q and dout; D_i = dout_i . out_i (the softmax gradient's row term)
  // and the saved logsumexp, per row.
  BX_STATIC void load_query_tile(const backward_tiles& t, const T* dout, const T* q, const T* o, const float* lse,
                                    const bx_attention_problem& a, int bh, int q0) {
    const bx_i64 base_q = head_at(a.q, a, bh), base_o = head_at(a.o, a, bh);
    load<BQ>(t.Qs, q + base_q, a.q.row, a.sq, q0);
    load<BQ>(t.dOs, dout + base_o, a.o.row, a.sq, q0);
    const int warp = bx_tid_x() >> 5, lane = bx_lane();
    for (int r = warp; r < BQ; r += WARPS) {
      const bool valid = q0 + r < a.sq;
      float dot = 0.0f;
      const bx_i64 row = base_o + (bx_i64)(q0 + r) * a.o.row;
      if (valid)
        for (int c = lane; c < D; c += 32) dot += bx_ld(dout, row + c) * bx_ld(o, row + c);
      dot = bx_warp_sum(dot);
      if (lane == 0) t.Drow[r] = dot, t.Lrow[r] = valid ? lse[(bx_i64)bh * a.sq + q0 + r] : 0.0f;
    }
  }

  // With the query tile at q0 and the key tile at k0 in shared memory: the dropped-out
  // probabilities Pd and dS = P (dP - D) * scale, both [BQ][BKV] as T; zero outside the problem.
  BX_STATIC void probabilities_and_gradients(const backward_tiles& t, const TB* bias, bx_i64 seed,
                                                const bx_attention_problem& a, int bh, int q0, int k0) {
    float s[scores::ACC], dp[scores::ACC];
    scores::zero(s);
    scores::zero(dp);
    scores::template mma<T, D>(s, t.Qs, LDH, t.Ks, LDH);
    scores::template mma<T, D>(dp, t.dOs, LDH, t.Vs, LDH);
    BX_UNROLL
    for (int i = 0; i < scores::ACC; ++i) {
      int r, c;
      scores::coord(i, r, c);
      const bool valid = q0 + r < a.sq && k0 + c < a.sk && same_example(a, bh, q0 + r, k0 + c);
      t.Ss[r * LDS + c] = valid ? bx_exp(s[i] * a.scale + bias_at(bias, a, bh, q0 + r, k0 + c) - t.Lrow[r]) : 0.0f;
      t.dPs[r * LDS + c] = dp[i];
    }
    bx_sync();
    for (int e = bx_tid_x(); e < BQ * BKV; e += THREADS) {
      const int r = e / BKV, c = e % BKV;
      const float p = t.Ss[r * LDS + c], f = p == 0.0f ? 0.0f : keep(a, seed, bh, q0 + r, k0 + c);
      bx_st(t.Pd, r * LDP + c, p * f);
      bx_st(t.dS, r * LDP + c, p * (t.dPs[r * LDS + c] * f - t.Drow[r]) * a.scale);
    }
    bx_sync();
  }

  BX_STATIC void backward(const T* dout, const T* q, const T* k, const T* v, const TB* bias, const T* o,
                             const float* lse, const bx_i64* seed, T* dq, T* dk, T* dv, const bx_attention_problem& a,
                             T* sh, float* sf) {
    const backward_tiles t = tiles_of(sh, sf);
    const int q_tiles = (a.sq + BQ - 1) / BQ, k_tiles = (a.sk + BKV - 1) / BKV, key_blocks = a.batch_heads * k_tiles;
    const bx_i64 seed_value = a.dropout ? *seed : 0;
    if (bx_bid_x() < key_blocks) {  // dK and dV of one key tile, over every query tile
      const int bh = bx_bid_x() / k_tiles, k0 = bx_bid_x() % k_tiles * BKV;
      const bx_i64 base = head_at(a.kv, a, bh);
      load<BKV>(t.Ks, k + base, a.kv.row, a.sk, k0);
      load<BKV>(t.Vs, v + base, a.kv.row, a.sk, k0);
      float gk[key_side::ACC], gv[key_side::ACC];
      key_side::zero(gk);
      key_side::zero(gv);
      for (int q0 = 0; q0 < a.sq; q0 += BQ) {
        if (!tiles_meet(a, bh, q0, k0)) continue;  // (no query of the tile sees a key of this one)
        load_query_tile(t, dout, q, o, lse, a, bh, q0);
        loads_done();
        probabilities_and_gradients(t, bias, seed_value, a, bh, q0, k0);
        key_side::template mma<T, BQ>(gv, t.Pd, LDP, t.dOs, LDH);  // dV += Pd^T dO
        key_side::template mma<T, BQ>(gk, t.dS, LDP, t.Qs, LDH);   // dK += dS^T Q
        bx_sync();  // the next query tile overwrites Qs, dOs, Pd and dS
      }
      BX_UNROLL
      for (int i = 0; i < key_side::ACC; ++i) {
        int r, c;
        key_side::coord(i, r, c);
        if (k0 + r < a.sk) {
          bx_st(dk, base + (bx_i64)(k0 + r) * a.kv.row + c, gk[i]);
          bx_st(dv, base + (bx_i64)(k0 + r) * a.kv.row + c, gv[i]);
        }
      }
    } else {  // dQ of one query tile, over every key tile
      const int id = bx_bid_x() - key_blocks, bh = id / q_tiles, q0 = id % q_tiles * BQ;
      const bx_i64 base_q = head_at(a.q, a, bh), base_k = head_at(a.kv, a, bh);
      load_query_tile(t, dout, q, o, lse, a, bh, q0);
      float gq[query_side::ACC];
      query_side::zero(gq);
      for (int k0 = 0; k0 < a.sk; k0 += BKV) {
        if (!tiles_meet(a, bh, q0, k0)) continue;
        load<BKV>(t.Ks, k + base_k, a.kv.row, a.sk, k0);
        load<BKV>(t.Vs, v + base_k, a.kv.row, a.sk, k0);
        loads_done();
        probabilities_and_gradients(t, bias, seed_value, a, bh, q0, k0);
        query_side::template mma<T, BKV>(gq, t.dS, LDP, t.Ks, LDH);  // dQ += dS K
        bx_sync();  // the next key tile overwrites Ks, Vs, Pd and dS
      }
      BX_UNROLL
      for (int i = 0; i < query_side::ACC; ++i) {
        int r, c;
        query_side::coord(i, r, c);
        if (q0 + r < a.sq) bx_st(dq, base_q + (bx_i64)(q0 + r) * a.q.row + c, gq[i]);
      }
    }
  }
};

#endif  // BX_MATRIX_H
