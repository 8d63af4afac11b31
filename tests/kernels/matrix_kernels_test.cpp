// The matrix kernels — GEMM with fused epilogues and fused attention forward and backward — in
// every strategy (simt on sm_61, hmma884 on sm_70, hmma16816 on sm_75 and, with cp.async, sm_80),
// under host emulation against the reference executor, on shapes that are not multiples of any
// tile: M, N, K of 1 and odd sizes, folded and broadcast batches, seq 1, seq not a multiple of 16,
// fully padded rows, dropout.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "codegen/render.h"
#include "harness.h"
#include "ir/parser.h"
#include "passes/fusion.h"

namespace bertc::testing {
namespace {

using ir::HostTensor;

ir::Environment<float> environment(const ir::Graph& g) {
  ir::Environment<float> env;
  int salt = 0;
  for (ir::ValueId v : g.values_of(ir::OpKind::Input)) {
    const ir::Value& val = g.value(v);
    auto t = HostTensor<float>::zeros(val.type);
    ++salt;
    if (t.is_real())
      for (size_t i = 0; i < t.real.size(); ++i) t.real[i] = 2.0f * std::sin(0.37f * static_cast<float>(i) + salt);
    else
      for (size_t i = 0; i < t.integer.size(); ++i) t.integer[i] = 20261130 + static_cast<int64_t>(i);
    env[val.name] = std::move(t);
  }
  return env;
}

// Renders `g` for `target`, checks every kernel in both thread orders, and that the matrix kernels
// got `strategies` (each one at least once). `adjust` may change the inputs (padding masks).
void expect_match(const ir::Graph& g, const codegen::RenderTarget& target, const std::set<std::string>& strategies,
                  const std::function<void(ir::Environment<float>&)>& adjust = {}) {
  KernelHarness h(g, BERTC_TEST_CACHE, target);
  std::set<std::string> seen;
  for (const codegen::KernelSpec& k : h.kernels().kernels)
    if (!k.strategy.empty()) seen.insert(k.strategy);
  EXPECT_EQ(seen, strategies) << "sm_" << target.sm << ", matmul " << target.matmul;
  const int sm = target.sm;
  const std::string strategy = fmt::format("{}", fmt::join(strategies, "+"));
  ir::Environment<float> env = environment(g);
  if (adjust) adjust(env);
  for (auto order : {codegen::ThreadOrder::Forward, codegen::ThreadOrder::Reverse})
    for (const KernelCheck& c : h.check_all(env, order))
      EXPECT_TRUE(c.ok) << "sm_" << sm << " " << strategy << ": " << c.family << " kernel " << c.kernel << ": " << c.problem;
}

struct Arch {
  int sm;
  const char* strategy;
  bool tf32 = false;  // precision tf32
  codegen::RenderTarget target(passes::MatmulPolicy matmul = passes::MatmulPolicy::Auto) const {
    return {sm, matmul, {}, tf32};
  }
};
// Each dtype's strategies (the rule of codegen/matrix_strategy.h).
std::vector<Arch> archs_for(const std::string& dtype) {
  if (dtype == "f32") return {{61, "simt"}, {80, "simt"}, {80, "tf32", true}};
  if (dtype == "f16") return {{61, "simt"}, {70, "hmma884"}, {75, "hmma16816"}, {80, "hmma16816"}};
  return {{75, "simt"}, {80, "hmma16816"}};
}

// Under tf32 the products' inputs are put on a grid of 1/16 (|x| <= 2: at most 6 significant bits,
// exact in TF32), so that the GEMMs are exact and the check stays as tight as f32's: rounding to
// TF32 itself is checked bit for bit against cvt.rna in tests/unit/host_matrix_test.cpp. What
// remains is attention's probabilities, which the kernel computes and rounds (harness.cpp).
void tf32_exact(ir::Environment<float>& env) {
  for (auto& [name, t] : env)
    for (float& x : t.real) x = std::round(x * 16.0f) / 16.0f;
}

ir::Graph fused(const std::string& text) {
  ir::Graph g = ir::parse(text);
  passes::fuse(g);
  return g;
}

class Gemm : public ::testing::TestWithParam<std::string> {};

// Odd M, N, K with a bias + GELU epilogue (two results), one element, and an accumulation.
TEST_P(Gemm, OddSizesAndEpilogues) {
  const std::string t = GetParam();
  const ir::Graph g = fused(fmt::format(R"(
graph @gemm {{
  %a = input : {0}[33,45]
  %b = input : {0}[45,17]
  %bias = input : {0}[17]
  %one_a = input : {0}[1,3]
  %one_b = input : {0}[3,1]
  %c = input : f32[130,70]
  %d = input : {0}[19,130]
  %e = input : {0}[19,70]
  %0 = matmul(%a, %b) : {0}[33,17]
  %1 = add(%0, %bias) : {0}[33,17]
  %2 = gelu(%1) : {0}[33,17]
  %3 = matmul(%one_a, %one_b) : {0}[1,1]
  %4 = matmul(%d, %e) {{transpose_a = true}} : {0}[130,70]
  %5 = cast(%4) : f32[130,70]
  %6 = add(%5, %c) : f32[130,70]
  return %1, %2, %3, %6
}}
)",
                                        t));
  for (const Arch& a : archs_for(t)) expect_match(g, a.target(), {a.strategy}, a.tf32 ? tf32_exact : nullptr);
}

// A batch folded into M (right operand without batch, transposed) and broadcast batches.
TEST_P(Gemm, Batches) {
  const std::string t = GetParam();
  const ir::Graph g = fused(fmt::format(R"(
graph @batches {{
  %x = input : {0}[2,20,24]
  %w = input : {0}[40,24]
  %p = input : {0}[2,1,9,16]
  %q = input : {0}[3,24,16]
  %0 = matmul(%x, %w) {{transpose_b = true}} : {0}[2,20,40]
  %1 = matmul(%p, %q) {{transpose_b = true}} : {0}[2,3,9,24]
  return %0, %1
}}
)",
                                        t));
  for (const Arch& a : archs_for(t)) expect_match(g, a.target(), {a.strategy}, a.tf32 ? tf32_exact : nullptr);
}

// The same products through cuBLAS (run on the host exactly as library_product_args() hands them to
// cuBLAS, column-major): plain ones write their result, the others go through the workspace and
// a generated epilogue kernel; the broadcast batch ([2,1] against [3]) is no strided batch and
// stays generated.
TEST_P(Gemm, Library) {
  const std::string t = GetParam();
  const std::string generated = t == "f32" ? "simt" : "hmma16816";
  const ir::Graph odd = fused(fmt::format(R"(
graph @library {{
  %a = input : {0}[33,45]
  %b = input : {0}[17,45]
  %bias = input : {0}[17]
  %c = input : f32[130,70]
  %d = input : {0}[19,130]
  %e = input : {0}[19,70]
  %x = input : {0}[2,20,24]
  %w = input : {0}[24,40]
  %p = input : {0}[2,1,9,16]
  %q = input : {0}[3,24,16]
  %u = input : {0}[3,9,16]
  %0 = matmul(%a, %b) {{transpose_b = true}} : {0}[33,17]
  %1 = add(%0, %bias) : {0}[33,17]
  %2 = gelu(%1) : {0}[33,17]
  %4 = matmul(%d, %e) {{transpose_a = true}} : {0}[130,70]
  %5 = cast(%4) : f32[130,70]
  %6 = add(%5, %c) : f32[130,70]
  %7 = matmul(%x, %w) : {0}[2,20,40]
  %8 = matmul(%p, %q) {{transpose_b = true}} : {0}[2,3,9,24]
  %9 = matmul(%u, %q) {{transpose_b = true}} : {0}[3,9,24]
  return %2, %6, %7, %8, %9
}}
)",
                                          t));
  expect_match(odd, {80, passes::MatmulPolicy::Library, {}}, {"cublas", generated});
  // tf32: cuBLAS's FAST_TF32 compute (inputs rounded on the host as on the GPU), the broadcast
  // batch on TF32 tensor cores.
  if (t == "f32") {
    KernelHarness h(odd, BERTC_TEST_CACHE, {80, passes::MatmulPolicy::Library, {}, true});
    for (const codegen::KernelSpec& k : h.kernels().kernels)
      if (k.library) {
        EXPECT_TRUE(k.library->tf32) << k.label;
        EXPECT_TRUE(codegen::library_product_args(*k.library).tf32) << k.label;
      }
    expect_match(odd, {80, passes::MatmulPolicy::Library, {}, true}, {"cublas", "tf32"}, tf32_exact);
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, Gemm, ::testing::Values("f32", "f16", "bf16"));

// matmul = auto: cuBLAS takes a plain product of 2^30 FLOPs and more; a smaller one, or one with
// an epilogue to fuse, is generated.
TEST(MatmulChoice, AutoSendsBigPlainProductsToCublas) {
  const ir::Graph g = fused(R"(
graph @choice {
  %a = input : bf16[1024,1024]
  %b = input : bf16[1024,512]
  %s = input : bf16[1024,511]
  %bias = input : bf16[512]
  %0 = matmul(%a, %b) : bf16[1024,512]
  %1 = matmul(%a, %s) : bf16[1024,511]
  %2 = matmul(%a, %b) : bf16[1024,512]
  %3 = add(%2, %bias) : bf16[1024,512]
  return %0, %1, %3
}
)");
  std::vector<std::string> strategies;
  for (const codegen::KernelSpec& k : codegen::render_graph(g, {80, passes::MatmulPolicy::Auto, {}}).kernels)
    if (!k.strategy.empty()) strategies.push_back(k.strategy);
  EXPECT_EQ(strategies, (std::vector<std::string>{"cublas", "hmma16816", "hmma16816"}));
  for (const codegen::KernelSpec& k : codegen::render_graph(g, {80, passes::MatmulPolicy::Generated, {}}).kernels)
    EXPECT_NE(k.strategy, "cublas");
}

// Attention forward and backward, batch 2, 2 heads, padding as quantize_and_mask sets it.
// Forward and backward of one attention; packed: attention_qkv over a [B,S,3,h,d] projection
// (rows 3 h d apart, k and v at offsets h d and 2 h d) and its [B,S,h,d] output.
// full_bias: a bias of its own per head and query row, [B,h,S,S] (BERT's is [B,1,1,S]).
// blocks: rows of several examples, the ids [2,S] (set by example_ids below) ending the operands.
ir::Graph attention_graph(const std::string& t, int seq, int d, double p, bool packed, bool full_bias = false,
                          bool blocks = false) {
  const std::string bias = full_bias ? fmt::format("[2,2,{0},{0}]", seq) : fmt::format("[2,1,1,{}]", seq);
  const std::string ids = blocks ? fmt::format("  %ids = input : i32[2,{}]\n", seq) : "";
  const std::string ids_operand = blocks ? ", %ids" : "", blocks_attr = blocks ? ", blocks = true" : "";
  if (packed)
    return ir::parse(fmt::format(R"(
graph @attention {{
  %qkv = input : {0}[2,{1},3,2,{2}]
  %bias = input : {0}{4}
  %dout = input : {0}[2,{1},2,{2}]
  %seed = input : i64[]
{5}  %o, %lse = attention_qkv(%qkv, %bias, %seed{6}) {{scale = 0.125, p = {3}, offset = 7{7}}} : {0}[2,{1},2,{2}], f32[2,2,{1}]
  %dqkv = attention_qkv_grad(%dout, %qkv, %bias, %o, %lse, %seed{6}) {{scale = 0.125, p = {3}, offset = 7{7}}} : {0}[2,{1},3,2,{2}]
  return %o, %lse, %dqkv
}}
)",
                                 t, seq, d, p, bias, ids, ids_operand, blocks_attr));
  return ir::parse(fmt::format(R"(
graph @attention {{
  %q = input : {0}[2,2,{1},{2}]
  %k = input : {0}[2,2,{1},{2}]
  %v = input : {0}[2,2,{1},{2}]
  %bias = input : {0}{4}
  %dout = input : {0}[2,2,{1},{2}]
  %seed = input : i64[]
{5}  %o, %lse = attention(%q, %k, %v, %bias, %seed{6}) {{scale = 0.125, p = {3}, offset = 7{7}}} : {0}[2,2,{1},{2}], f32[2,2,{1}]
  %dq, %dk, %dv = attention_grad(%dout, %q, %k, %v, %bias, %o, %lse, %seed{6}) {{scale = 0.125, p = {3}, offset = 7{7}}} : {0}[2,2,{1},{2}], {0}[2,2,{1},{2}], {0}[2,2,{1},{2}]
  return %o, %lse, %dq, %dk, %dv
}}
)",
                               t, seq, d, p, bias, ids, ids_operand, blocks_attr));
}

// Rows of several examples, rising ids: batch 0 holds three examples of a third of its S tokens
// each (its 3 keys padded with -10000 in the last: a padding query of its own, whose every logit
// sat near -10000, would have the ill-conditioned logsumexp quantize_and_mask explains); batch 1
// examples of 5, 6 and the rest (every key of it masked by -30). At S = 100 and tiles of 16 to 64
// rows, boundaries fall inside tiles and whole tile pairs are skipped.
void example_ids(ir::Environment<float>& env) {
  HostTensor<float>& ids = env.at("ids");
  const int64_t seq = ids.type.shape[1];
  for (int64_t i = 0; i < seq; ++i) {
    ids.integer[static_cast<size_t>(i)] = std::min<int64_t>(2, i / std::max<int64_t>(1, seq / 3));
    ids.integer[static_cast<size_t>(seq + i)] = i < 5 ? 0 : i < 11 ? 1 : 2;
  }
}

// q and k on a grid of 1/16 in [-1, 1] (logits of order 1, as trained attention has): every score
// is then exact whatever the order of its sum, in 16 bits too, so the -10000 of padding (whose
// float ulp is 1e-3) rounds alike in kernel and reference. Batch 0's last 3 keys are padded with
// BERT's -10000 (exactly zero probability). Every key of batch 1 is padded with -30 instead: a
// row whose every logit sits near -10000 has a logsumexp whose f32 rounding (5e-4) makes the
// backward's recomputed probabilities sum to 1 +- 5e-4 — in any flash-attention backward and in
// the reference alike, but differently — while -30 masks as completely and stays well-conditioned.
void quantize_and_mask(ir::Environment<float>& env) {
  for (const char* name : {"q", "k", "qkv"})
    if (env.count(name))
      for (float& x : env.at(name).real) x = std::round(x * 8.0f) / 16.0f;
  HostTensor<float>& bias = env.at("bias");
  if (bias.type.shape[1] == 1) {  // [B,1,1,S]
    const size_t seq = bias.real.size() / 2;
    for (size_t j = 0; j < seq; ++j) {
      bias.real[j] = j + 3 >= seq && seq > 3 ? -10000.0f : 0.0f;
      bias.real[seq + j] = -30.0f;
    }
    return;
  }
  // [B,h,S,S]: the same padding of keys, and a bias of its own per head and query row on a grid of
  // 1/4 (exact in 16 bits), so that a row read from the wrong place changes the result.
  const size_t seq = static_cast<size_t>(bias.type.shape[3]), heads = static_cast<size_t>(bias.type.shape[1]);
  for (size_t b = 0; b < 2; ++b)
    for (size_t h = 0; h < heads; ++h)
      for (size_t i = 0; i < seq; ++i)
        for (size_t j = 0; j < seq; ++j)
          bias.real[((b * heads + h) * seq + i) * seq + j] =
              b == 1 ? -30.0f
              : j + 3 >= seq && seq > 3 ? -10000.0f
                                        : static_cast<float>(static_cast<int>((i * 7 + j * 3 + h) % 5) - 2) * 0.25f;
}

struct AttentionCase {
  std::string dtype;
  int seq, d;
  double p;
  bool packed = false;
  bool full_bias = false;
  bool blocks = false;
};

void PrintTo(const AttentionCase& c, std::ostream* os) {
  *os << c.dtype << " seq " << c.seq << " d " << c.d << " p " << c.p;
}

class Attention : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(Attention, MatchesReference) {
  const AttentionCase c = GetParam();
  const ir::Graph g = attention_graph(c.dtype, c.seq, c.d, c.p, c.packed, c.full_bias, c.blocks);
  for (const Arch& a : archs_for(c.dtype)) {
    // Under tf32 the backward of head size 64 runs simt: its 32 x 32 tiles of f32 would need 52 KB
    // of shared memory (head size 32: 36 KB, tf32).
    std::set<std::string> strategies = {a.strategy};
    if (a.tf32 && c.d > 32) strategies.insert("simt");
    expect_match(g, a.target(), strategies, [&](ir::Environment<float>& env) {
      if (a.tf32) tf32_exact(env);
      quantize_and_mask(env);
      if (c.blocks) example_ids(env);
    });
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, Attention,
                         ::testing::Values(AttentionCase{"f32", 20, 64, 0.1}, AttentionCase{"f32", 1, 32, 0.0}, AttentionCase{"f32", 20, 32, 0.1},
                                           AttentionCase{"f16", 33, 64, 0.1}, AttentionCase{"f16", 1, 64, 0.1},
                                           AttentionCase{"bf16", 20, 32, 0.1}, AttentionCase{"bf16", 70, 64, 0.0},
                                           AttentionCase{"f32", 20, 32, 0.1, true}, AttentionCase{"f16", 33, 64, 0.1, true},
                                           // A full bias with S = 100, not a tile multiple: padded query rows
                                           // of the last tile must not read the bias past its rows.
                                           AttentionCase{"f32", 100, 32, 0.0, false, true},
                                           AttentionCase{"f16", 100, 64, 0.1, false, true},
                                           // Rows of several examples: tiles between examples skipped, a
                                           // boundary inside a tile masked, on every strategy (f32: simt
                                           // and tf32; f16: m8n8k4 and m16n8k16; bf16: m16n8k16).
                                           AttentionCase{"f32", 100, 32, 0.1, false, false, true},
                                           AttentionCase{"f16", 100, 64, 0.1, true, false, true},
                                           AttentionCase{"bf16", 70, 64, 0.0, false, false, true}),
                         [](const auto& info) {
                           return fmt::format("{}_seq{}_d{}_{}{}{}{}", info.param.dtype, info.param.seq, info.param.d,
                                              info.param.p > 0 ? "dropout" : "nodropout", info.param.packed ? "_packed" : "",
                                              info.param.full_bias ? "_full_bias" : "",
                                              info.param.blocks ? "_blocks" : "");
                         });

}  // namespace
}  // namespace bertc::testing
