// The attention family: attention, attention_grad, attention_qkv and attention_qkv_grad as one
// bx_attention instantiation of the prelude (flash-attention style, see bx_matrix.h) reading and
// writing rows where ir::attention_layout says (packed or not), its strategy from the rule of
// matrix_strategy.h, its tiles and warp layouts chosen here to fit 48 KB of shared memory.
#include <optional>

#include <fmt/format.h>

#include "codegen/family.h"
#include "ir/attention_layout.h"
#include "ir/philox.h"

namespace bertc::codegen {
namespace {

constexpr int kWarps = 4;
constexpr int64_t kSharedLimit = 48 * 1024;  // static shared memory of one block, every arch

// Warp rows (of 4 warps) for a rows x cols product whose warp tiles the strategy can take.
std::optional<int> warp_rows(MatrixStrategy s, int64_t rows, int64_t cols) {
  for (int g : {4, 2, 1})
    if (rows % g == 0 && (rows / g) % strategy_warp_rows(s) == 0 && cols % (kWarps / g) == 0 &&
        (cols / (kWarps / g)) % strategy_warp_cols(s) == 0)
      return g;
  return std::nullopt;
}

struct Tiling {
  MatrixStrategy strategy;
  int bq, bkv, sg, og, kg;  // tiles and warp rows of the score, query-side and key-side products
};

// Tiles for a strategy: tensor-core ones are larger, except a forward query tile of 4-byte inputs
// (tf32), which at 64 rows would not fit 48 KB.
std::optional<Tiling> tiling(MatrixStrategy s, bool backward, int64_t d, int64_t bytes) {
  const bool tensor = s != MatrixStrategy::Simt;
  if (d % strategy_k_step(s) != 0 || (tensor && d % 16 != 0)) return std::nullopt;  // d is the score product's depth
  const int bq = tensor ? (backward || bytes == 4 ? 32 : 64) : (backward ? 16 : 32), bkv = tensor ? 32 : (backward ? 16 : 32);
  const auto sg = warp_rows(s, bq, bkv), og = warp_rows(s, bq, d), kg = backward ? warp_rows(s, bkv, d) : 1;
  if (!sg || !og || !kg) return std::nullopt;
  return Tiling{s, bq, bkv, *sg, *og, *kg};
}

// Strides of a bias of `shape` broadcast (right-aligned) to [batch, heads, sq, sk]; 0 where it
// broadcasts.
std::vector<int64_t> bias_strides(const ir::Shape& shape) {
  if (shape.size() > 4) throw ir::Error("attention: a bias of more than 4 dims");
  std::vector<int64_t> strides(4, 0);
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    const size_t d = i + 4 - shape.size();
    strides[d] = shape[i] == 1 ? 0 : stride;
    stride *= shape[i];
  }
  return strides;
}

// Shared bytes of a tiling as bx_attention lays them out (rows padded by 16 bytes).
int64_t shared_bytes(const Tiling& t, bool backward, int64_t d, int64_t bytes) {
  const int64_t pad = 16 / bytes, ldh = d + pad, lds = t.bkv + 1, ldp = t.bkv + pad, bq = t.bq, bkv = t.bkv;
  return backward ? (2 * (bq + bkv) * ldh + 2 * bq * ldp) * bytes + (2 * bq * lds + 2 * bq) * 4
                  : ((bq + 2 * bkv) * ldh + bq * ldp) * bytes + (bq * lds + 3 * bq) * 4;
}

// The prelude's bx_rows of a layout's rows.
std::string rows_literal(const ir::AttentionRows& r) { return fmt::format("{{{}, {}, {}}}", r.batch, r.head, r.row); }

// Operand `at`, advanced to where its rows start (k and v of a packed projection).
std::string at_rows(const char* kind, size_t at, const ir::AttentionRows& r) {
  return r.offset ? fmt::format("{}{} + {}", kind, at, r.offset) : fmt::format("{}{}", kind, at);
}

}  // namespace

KernelSpec render_attention(const KernelInput& in) {
  const ir::AttentionLayout l = ir::attention_layout(in.graph, in.op);
  const bool backward = l.backward;
  const ir::TensorType& q = in.graph.value(in.op.operands[l.q]).type;
  const ir::TensorType& bias = in.graph.value(in.op.operands[l.bias]).type;
  const int64_t batch = l.batch, heads = l.heads, sq = l.sq, sk = l.sk, d = l.d;
  const bool has_seed = l.seed.has_value();
  const double p = in.op.attr<double>("p");
  const bool dropout = has_seed && p > 0;

  // The arch's strategy where its tiles fit the head size and shared memory, else simt (head sizes
  // not a multiple of 16; tf32's backward, whose 32 x 32 f32 tiles need 52 KB).
  const int64_t bytes = static_cast<int64_t>(ir::dtype_bytes(q.dtype));
  std::optional<Tiling> t = tiling(choose_strategy(in.target.sm, q.dtype, in.target.tf32), backward, d, bytes);
  if (!t || shared_bytes(*t, backward, d, bytes) > kSharedLimit) t = tiling(MatrixStrategy::Simt, backward, d, bytes);
  if (!t)
    throw ir::Error(fmt::format("attention: head size {} (hidden_size / num_attention_heads) fits no tiling of 4 warps "
                                "of the fused attention (it must be a multiple of 8): choose num_attention_heads so "
                                "that it is, or run the unfused attention ([compile] fused_attention = false, or "
                                "--fused-attention false)",
                                d));
  const MatrixStrategy s = t->strategy;
  const int bq = t->bq, bkv = t->bkv, sg = t->sg, og = t->og, kg = t->kg;
  const int64_t shared = shared_bytes(*t, backward, d, bytes);
  if (shared > kSharedLimit)
    throw ir::Error(fmt::format("attention: head size {} needs {} bytes of shared memory for {} x {} tiles, over the {} "
                                "a block may use; run the unfused attention ([compile] fused_attention = false, or "
                                "--fused-attention false)",
                                d, shared, bq, bkv, kSharedLimit));
  if (batch * heads > int64_t{1} << 24 || sq >= int64_t{1} << 30 || sk >= int64_t{1} << 30)
    throw ir::Error("attention: a problem beyond one launch's grid");

  const std::string T = storage_type(q.dtype), TB = storage_type(bias.dtype);
  const std::vector<int64_t> bs = bias_strides(bias.shape);
  const float keep_scale = dropout ? 1.0f / (1.0f - static_cast<float>(p)) : 1.0f;
  Emitter e(in.body, input_names(in));
  e.line(fmt::format("typedef bx_attention<bx_{}, {}, {}, {}, {}, {}, {}, {}, {}, {}> attention;", strategy_name(s), T, TB,
                     d, bq, bkv, sg, og, kg, uses_cp_async(in.target.sm) ? "true" : "false"));
  const char* part = backward ? "BACKWARD" : "FORWARD";
  e.line(fmt::format("BX_SHARED({}, sh, attention::{}_H);", T, part));
  e.line(fmt::format("BX_SHARED(float, sf, attention::{}_F);", part));
  // (rows of several examples: their ids end the problem; a kernel without them is written as
  // before, ids 0)
  const std::string ids = l.example_ids ? fmt::format(", in{}", *l.example_ids) : "";
  e.line(fmt::format("const bx_attention_problem a = {{{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}u, {}{}}};",
                     batch * heads, heads, sq, sk, rows_literal(l.q_rows), rows_literal(l.k_rows), rows_literal(l.out_rows),
                     bs[0], bs[1], bs[2], bs[3], float_literal(in.op.attr<double>("scale")),
                     dropout ? "true" : "false", dropout_offset(in.op.attr<int64_t>("offset")), dropout ? ir::dropout_threshold(p) : 0,
                     float_literal(keep_scale), ids));
  const std::string seed = has_seed ? fmt::format("in{}", *l.seed) : "(const bx_i64*)0";
  const std::string qkv = fmt::format("{}, {}, {}", at_rows("in", l.q, l.q_rows), at_rows("in", l.k, l.k_rows),
                                      at_rows("in", l.v, l.v_rows));
  if (backward)
    e.line(fmt::format("attention::backward(in{}, {}, in{}, in{}, in{}, {}, {}, {}, {}, a, sh, sf);", l.dout, qkv, l.bias,
                       l.out, l.lse, seed, at_rows("out", l.dq, l.q_rows), at_rows("out", l.dk, l.k_rows),
                       at_rows("out", l.dv, l.v_rows)));
  else
    e.line(fmt::format("attention::forward({}, in{}, {}, out0, out1, a, sh, sf);", qkv, l.bias, seed));

  KernelSpec spec;
  spec.params = buffer_params(in);
  spec.source = kernel_text(spec.params, e.take());
  spec.block = {kWarps * 32};
  const int64_t q_tiles = (sq + bq - 1) / bq, k_tiles = (sk + bkv - 1) / bkv;
  spec.grid = {static_cast<int>(batch * heads * (backward ? q_tiles + k_tiles : q_tiles))};
  spec.cooperative = true;
  spec.work_follows_data = l.example_ids.has_value();  // (the tiles between examples skipped)
  spec.strategy = strategy_name(s);
  // 3 blocks of 128 threads an SM: at most 168 registers a thread (65536 / 384, in steps of 8),
  // which every attention kernel meets without spilling (bert-base: sm_61 simt 154, sm_70 m8n8k4
  // 112 with its k loop kept rolled, sm_75+ 156 at most).
  spec.min_blocks_per_sm = 3;
  return spec;
}

}  // namespace bertc::codegen
