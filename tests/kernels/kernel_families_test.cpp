// Each kernel family on small graphs written for it, under host emulation against the reference,
// in both thread orders: index transformations, broadcasts, 16-bit storage, dropout, rows,
// reductions, scatter-add and the multi-tensor optimizer kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "harness.h"
#include "ir/parser.h"
#include "codegen/render.h"
#include "passes/fusion.h"

namespace bertc::testing {
namespace {

using ir::HostTensor;

// Deterministic data for every input, param and state of `g`: floats in [-2, 2], integers in
// [0, bound) with bound from `int_bounds` by name (default 2).
ir::Environment<float> environment(const ir::Graph& g, const std::map<std::string, int64_t>& int_bounds = {}) {
  ir::Environment<float> env;
  int salt = 0;
  for (ir::OpKind kind : {ir::OpKind::Input, ir::OpKind::Param, ir::OpKind::State})
    for (ir::ValueId v : g.values_of(kind)) {
      const ir::Value& val = g.value(v);
      auto t = HostTensor<float>::zeros(val.type);
      ++salt;
      if (t.is_real()) {
        for (size_t i = 0; i < t.real.size(); ++i) t.real[i] = 2.0f * std::sin(0.7f * static_cast<float>(i) + salt);
      } else {
        const int64_t bound = int_bounds.count(val.name) ? int_bounds.at(val.name) : 2;
        for (size_t i = 0; i < t.integer.size(); ++i) t.integer[i] = static_cast<int64_t>((i * 7 + salt) % bound);
      }
      env[val.name] = std::move(t);
    }
  return env;
}

// Renders, compiles and checks every kernel of `text` (fused first when asked) in both orders.
void expect_kernels_match(const std::string& text, bool fuse, const std::map<std::string, int64_t>& int_bounds = {},
                          size_t expect_kernels = 0) {
  ir::Graph g = ir::parse(text);
  if (fuse) passes::fuse(g);
  KernelHarness h(g, BERTC_TEST_CACHE);
  if (expect_kernels) {
    EXPECT_EQ(h.kernels().kernels.size(), expect_kernels);
  }
  for (auto order : {codegen::ThreadOrder::Forward, codegen::ThreadOrder::Reverse})
    for (const KernelCheck& c : h.check_all(environment(g, int_bounds), order))
      EXPECT_TRUE(c.ok) << c.family << " kernel " << c.kernel << " (" << c.label << "): " << c.problem;
}

TEST(KernelFamilies, PointwiseLoadsAndBroadcasts) {
  expect_kernels_match(R"(
graph @pw {
  %x = input : f32[4,6]
  %y = input : f32[6]
  %ids = input : i32[3]
  %table = param : f32[10,6]
  %seed = input : i64[]
  %0 = add(%x, %y) : f32[4,6]
  %1 = slice(%0) {axis = 1, start = 2, end = 5} : f32[4,3]
  %2 = pad(%1) {axis = 0, before = 1, after = 2} : f32[7,3]
  %3 = permute(%2) {perm = [1,0]} : f32[3,7]
  %4 = gelu(%3) : f32[3,7]
  %5 = gather(%table, %ids) : f32[3,6]
  %6 = concat(%5, %0) {axis = 0} : f32[7,6]
  %7 = cast(%6) : f16[7,6]
  %8 = tanh(%7) : f16[7,6]
  %9 = dropout(%8, %seed) {p = 0.25, offset = 3} : f16[7,6]
  %10 = cast(%9) : bf16[7,6]
  %11 = where(%x, %0, %y) : f32[4,6]
  %12 = reshape(%11) : f32[24]
  %13 = exp(%12) : f32[24]
  %14 = sigmoid(%13) : f32[24]
  %15 = expm1(%12) : f32[24]
  return %4, %10, %14, %15
}
)", /*fuse=*/false, {{"ids", 10}});
}

// The elementwise ops the graph above leaves out, each once (log and rsqrt of positive values;
// leaky_relu's slope an attribute its kernel expression reads),
// so that every op with a kernel has a case (tests/layering/check_kernel_cases.py).
TEST(KernelFamilies, TheOtherElementwiseOps) {
  expect_kernels_match(R"(
graph @elementwise {
  %x = input : f32[5,7]
  %y = input : f32[5,7]
  %dy = input : f32[5,7]
  %0 = neg(%x) : f32[5,7]
  %1 = sub(%0, %y) : f32[5,7]
  %2 = exp(%1) : f32[5,7]
  %3 = log(%2) : f32[5,7]
  %4 = rsqrt(%2) : f32[5,7]
  %5 = relu(%x) : f32[5,7]
  %6 = minimum(%3, %y) : f32[5,7]
  %7 = maximum(%4, %5) : f32[5,7]
  %8 = gelu_grad(%dy, %x) : f32[5,7]
  %9 = relu_grad(%dy, %y) : f32[5,7]
  %10 = leaky_relu(%y) {slope = 0.2} : f32[5,7]
  return %6, %7, %8, %9, %10
}
)", /*fuse=*/false);
}

// block_bias as a row of several examples uses it: [B,1,1,S] bias, ids of queries [B,1,S,1] and of
// keys [B,1,1,S] to [B,1,S,S]. (relu makes about half the ids 0, so both branches are taken.)
TEST(KernelFamilies, BlockBiasBroadcastsItsIds) {
  expect_kernels_match(R"(
graph @blocks {
  %bias = input : f32[2,1,1,6]
  %iq = input : f32[2,1,6,1]
  %ik = input : f32[2,1,1,6]
  %q = relu(%iq) : f32[2,1,6,1]
  %k = relu(%ik) : f32[2,1,1,6]
  %0 = block_bias(%bias, %q, %k) : f32[2,1,6,6]
  return %0
}
)", /*fuse=*/false);
}

// Rows of 32 (a warp each) and of 700 (a block each): softmax, layer norm with bias + dropout +
// residual before it, and their gradients; the fusion pass makes the groups.
TEST(KernelFamilies, RowOpsAndTheirGradients) {
  for (int n : {32, 700})
    expect_kernels_match(fmt::format(R"(
graph @rows {{
  %x = input : f32[3,5,{0}]
  %r = input : f32[3,5,{0}]
  %dy = input : f32[3,5,{0}]
  %b = param : f32[{0}]
  %w = param : f32[{0}]
  %seed = input : i64[]
  %0 = add(%x, %b) : f32[3,5,{0}]
  %1 = dropout(%0, %seed) {{p = 0.1, offset = 5}} : f32[3,5,{0}]
  %2 = add(%1, %r) : f32[3,5,{0}]
  %3 = layer_norm(%2, %w, %b) {{eps = 1e-5}} : f32[3,5,{0}]
  %4 = softmax(%3) : f32[3,5,{0}]
  %5 = softmax_grad(%dy, %4) : f32[3,5,{0}]
  %6, %7, %8 = layer_norm_grad(%5, %2, %w) {{eps = 1e-5}} : f32[3,5,{0}], f32[{0}], f32[{0}]
  %9 = cast(%6) : bf16[3,5,{0}]
  return %9, %7, %8
}}
)", n), /*fuse=*/true);
}

// The MLM loss and its gradient in one kernel: weights, an ignored label, f16 logits.
TEST(KernelFamilies, CrossEntropyWithItsGradient) {
  for (int classes : {40, 900})
    expect_kernels_match(fmt::format(R"(
graph @ce {{
  %logits = input : f16[6,{0}]
  %labels = input : i32[6]
  %weights = input : f32[6]
  %dloss = input : f32[]
  %0 = cross_entropy(%logits, %labels, %weights) {{ignore_index = 1}} : f32[]
  %1 = cross_entropy_grad(%dloss, %logits, %labels, %weights) {{ignore_index = 1}} : f16[6,{0}]
  return %0, %1
}}
)", classes), /*fuse=*/true, {{"labels", 4}}, 1);
}

// Reductions over the last axis (a block per output) and over leading axes (32 x 8 tiles), with
// ops before and after, keepdim and mean.
TEST(KernelFamilies, Reductions) {
  expect_kernels_match(R"(
graph @red {
  %x = input : f32[6,5,70]
  %acc = state : f32[70]
  %seed = input : i64[]
  %0 = dropout(%x, %seed) {p = 0.2, offset = 9} : f32[6,5,70]
  %1 = reduce_sum(%0) {axes = [0,1]} : f32[70]
  %2 = add(%acc, %1) : f32[70]
  %3 = reduce_mean(%x) {axes = [2], keepdim = true} : f32[6,5,1]
  %4 = reduce_max(%x) {axes = [0,2]} : f32[5]
  %5 = cast(%x) : f16[6,5,70]
  %6 = reduce_sum(%5) {axes = [1]} : f16[6,70]
  return %2, %3, %4, %6
}
)", /*fuse=*/true);
}

// Gather's gradient: the indices sorted (stably, per batch), then rows added where indices point
// (repeats add up in sorted order), padding rows skipped. 600 indices into 9 rows make long runs
// of one index; 2 x 3 positions into rows of 7, batched, short ones.
TEST(KernelFamilies, ScatterAdd) {
  expect_kernels_match(R"(
graph @scatter {
  %updates = input : f32[20,30,16]
  %ids = input : i32[20,30]
  %pos = input : i32[2,3]
  %rows = input : bf16[2,3,16]
  %o0 = argsort(%ids) {rows = 9} : i32[600]
  %0 = scatter_add(%updates, %ids, %o0) {padding_idx = 0} : f32[9,16]
  %o1 = argsort(%pos) {rows = 7, batch_dims = 1} : i32[6]
  %1 = scatter_add(%rows, %pos, %o1) {batch_dims = 1} : bf16[2,7,16]
  return %o0, %0, %o1, %1
}
)", /*fuse=*/false, {{"ids", 9}, {"pos", 7}});
}

// The optimizer graph of a small model: gradient norm and overflow check, then AdamW for every
// parameter with loss scaling, in two multi-tensor kernels.
const char* kOptimizerGraph = R"(
graph @opt {
  %lr = input : f32[]
  %step = state : f32[]
  %loss_scale = state {init = 1024} : f32[]
  %w = param : f32[7,33]
  %b = param : f32[33]
  %w.grad_acc = state : f32[7,33]
  %b.grad_acc = state : f32[33]
  %w.m = state : f32[7,33]
  %w.v = state : f32[7,33]
  %b.m = state : f32[33]
  %b.v = state : f32[33]
  %c1 = constant {value = 1} : f32[]
  %c0 = constant {value = 0} : f32[]
  %unscale = div(%c1, %loss_scale) : f32[]
  %0 = mul(%w.grad_acc, %unscale) : f32[7,33]
  %1 = mul(%b.grad_acc, %unscale) : f32[33]
  %2 = mul(%0, %0) : f32[7,33]
  %3 = reduce_sum(%2) {axes = [0,1]} : f32[]
  %4 = mul(%1, %1) : f32[33]
  %5 = reduce_sum(%4) {axes = [0]} : f32[]
  %6 = add(%3, %5) : f32[]
  %grad_norm = sqrt(%6) : f32[]
  %finite = all_finite(%w.grad_acc, %b.grad_acc) : f32[]
  %count = add(%step, %c1) : f32[]
  %n = cast(%count) : i64[]
  %7, %8, %9 = adamw(%w, %0, %w.m, %w.v, %lr, %n) {beta1 = 0.9, beta2 = 0.999, eps = 1e-6, weight_decay = 0.01} : f32[7,33], f32[7,33], f32[7,33]
  %10, %11, %12 = adamw(%b, %1, %b.m, %b.v, %lr, %n) {beta1 = 0.9, beta2 = 0.999, eps = 1e-6, weight_decay = 0.0} : f32[33], f32[33], f32[33]
  %13 = where(%finite, %7, %w) : f32[7,33]
  %14 = where(%finite, %10, %b) : f32[33]
  %15 = broadcast(%c0) : f32[7,33]
  %16 = where(%finite, %count, %step) : f32[]
  update(%w, %13)
  update(%b, %14)
  update(%w.m, %8)
  update(%w.v, %9)
  update(%b.m, %11)
  update(%b.v, %12)
  update(%w.grad_acc, %15)
  update(%step, %16)
  return %grad_norm
}
)";

TEST(KernelFamilies, MultiTensorOptimizer) {
  expect_kernels_match(kOptimizerGraph, /*fuse=*/true, {}, 2);
}

// 1-bit Adam's adamw (freeze_step = 3): at steps 2 and 3 an ordinary AdamW step, at step 7 exp_avg
// taken as the step's momentum and exp_avg_sq kept, bias-corrected as at step 3 (ir/ops.def); the
// emitter's selects against the reference's branch.
TEST(KernelFamilies, AdamwPastFreezeStep) {
  expect_kernels_match(R"(
graph @frozen {
  %lr = input : f32[]
  %w = param : f32[5,9]
  %g = input : f32[5,9]
  %w.m = state : f32[5,9]
  %w.v = state : f32[5,9]
  %two = constant {value = 2} : f32[]
  %seven = constant {value = 7} : f32[]
  %early = cast(%two) : i64[]
  %late = cast(%seven) : i64[]
  %three = constant {value = 3} : f32[]
  %at = cast(%three) : i64[]
  %0, %1, %2 = adamw(%w, %g, %w.m, %w.v, %lr, %early) {beta1 = 0.9, beta2 = 0.999, eps = 1e-6, weight_decay = 0.01, freeze_step = 3} : f32[5,9], f32[5,9], f32[5,9]
  %3, %4, %5 = adamw(%w, %g, %w.m, %w.v, %lr, %late) {beta1 = 0.9, beta2 = 0.999, eps = 1e-6, weight_decay = 0.01, freeze_step = 3} : f32[5,9], f32[5,9], f32[5,9]
  %6, %7, %8 = adamw(%w, %g, %w.m, %w.v, %lr, %at) {beta1 = 0.9, beta2 = 0.999, eps = 1e-6, weight_decay = 0.01, freeze_step = 3} : f32[5,9], f32[5,9], f32[5,9]
  return %0, %1, %2, %3, %4, %5, %6, %7, %8
}
)", /*fuse=*/false);
}

}  // namespace
}  // namespace bertc::testing

namespace bertc::testing {
namespace {

// A kernel broken on purpose must fail the harness: the checks above mean something.
struct Broken {
  std::string what;
  std::function<bool(codegen::KernelSpec&)> breaks;  // false: this kernel is not one to break
};

void expect_caught(const std::string& text, const Broken& b) {
  const ir::Graph g = [&] {
    ir::Graph x = ir::parse(text);
    passes::fuse(x);
    return x;
  }();
  codegen::GraphKernels kernels = codegen::render_graph(g);
  size_t broken = 0;
  for (codegen::KernelSpec& k : kernels.kernels)
    if (b.breaks(k)) {
      ++broken;
      const std::string entry = " void " + k.name + "(";
      const size_t at = k.source.find(entry);
      ASSERT_NE(at, std::string::npos) << k.source;
      k.name += "_broken";  // another name: another entry in the host library
      k.source.insert(at + entry.size() - 1, "_broken");
    }
  ASSERT_GT(broken, 0u) << b.what << ": nothing to break";
  // The harness runs both thread orders; a race may show in one of them only (the other happens
  // to run the writers first), so the pair must catch it.
  KernelHarness h(g, std::move(kernels), BERTC_TEST_CACHE);
  bool caught = false;
  for (auto order : {codegen::ThreadOrder::Forward, codegen::ThreadOrder::Reverse})
    for (const KernelCheck& c : h.check_all(environment(g), order))
      if (c.kernel.ends_with("_broken")) caught = caught || !c.ok;
  EXPECT_TRUE(caught) << b.what << " passed the harness";
}

bool replace_first(std::string& s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  if (at == std::string::npos) return false;
  s.replace(at, from.size(), to);
  return true;
}

const char* kBiasGradient = R"(
graph @bias_grad {
  %dy = input : f32[4,16,48]
  %0 = reduce_sum(%dy) {axes = [0,1]} : f32[48]
  %1 = gelu(%dy) : f32[4,16,48]
  return %0, %1
}
)";

TEST(BrokenKernels, AMissingBarrierIsCaught) {
  // The column reduction stores partial sums in shared memory, then one row of threads adds them.
  expect_caught(kBiasGradient, {"reduction without its first barrier", [](codegen::KernelSpec& k) {
                                  return k.family == ir::KernelFamily::Reduction && replace_first(k.source, "bx_sync();", "");
                                }});
}

TEST(BrokenKernels, AnOffByOneIndexIsCaught) {
  // The GELU kernel stores four elements at a time; store each one place further on: the last
  // thread writes past the end of the output.
  expect_caught(kBiasGradient, {"pointwise writing at i + 1", [](codegen::KernelSpec& k) {
                                  return k.family == ir::KernelFamily::Pointwise &&
                                         replace_first(k.source, "bx_stv<4>(out0, i0, vout0);",
                                                       "for (int k = 0; k < 4; ++k) bx_st(out0, i0 + k + 1, vout0[k]);");
                                }});
  // Read each element one place further on: wrong values, and a read past the end.
  expect_caught(kBiasGradient, {"pointwise reading at i + 1", [](codegen::KernelSpec& k) {
                                  return k.family == ir::KernelFamily::Pointwise &&
                                         replace_first(k.source, "bx_ldv<4>(in0, i0, vin0);",
                                                       "for (int k = 0; k < 4; ++k) vin0[k] = bx_ld(in0, i0 + k + 1);");
                                }});
  // The column reduction's rows, one too few: the last row of each column is left out.
  expect_caught(kBiasGradient, {"reduction stopping a row early", [](codegen::KernelSpec& k) {
                                  return k.family == ir::KernelFamily::Reduction && replace_first(k.source, "k < 64; k += 8", "k < 63; k += 8");
                                }});
}

TEST(BrokenKernels, AKernelThatLeavesItsScratchDirtyIsCaught) {
  // The next launch would count its blocks from this one's total, and no block would be last.
  expect_caught(kOptimizerGraph, {"multi-tensor norm without the counter reset", [](codegen::KernelSpec& k) {
                                    return k.family == ir::KernelFamily::MultiTensorNorm && replace_first(k.source, "*counter = 0;", ";");
                                  }});
}

}  // namespace
}  // namespace bertc::testing
