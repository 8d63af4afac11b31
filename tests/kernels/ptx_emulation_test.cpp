// The PTX emulator (ptx/) running the PTX NVRTC emits for every kernel of a bert-tiny training
// step and optimizer step (ptx_step.h), for each GPU generation's form of the products: sm_61
// fp32 (SIMT), sm_70 fp16 (mma.m8n8k4), sm_75 fp16 (m16n8k8), sm_80 tf32 (m16n8k8) and bf16
// (m16n8k16, ldmatrix, cp.async), sm_90 bf16; each launch value by value against the reference
// executor, under the emulator's checks. This executes what the GPU would run, not the host's
// compile of the kernels' source.
#include <gtest/gtest.h>

#include <functional>
#include <iostream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "ptx_step.h"

namespace bertc::testing {
namespace {

// Every launch of a bert-tiny step and optimizer step in `precision`, from NVRTC's PTX for `sm`.
// Attention's products on tensor cores beside the IR's (q.k and p.v forward, seven products
// backward): the mma's FLOPs never fewer, and equal where `exact` (the heads' shapes whole tiles);
// at bert-tiny's 32 tokens the forward's 64-row tiles compute twice its products. (A SIMT kernel's
// FMAs mix with its softmax's, so the products are compared where mma runs them.)
void expect_attention_products_counted(const PtxStepRun& run, bool exact) {
  size_t attention = 0;
  for (const PtxLaunch& l : run.launches)
    if (l.family == ir::KernelFamily::Attention && l.strategy != "simt") {  // (tf32's backward: SIMT, its tiles too large)
      ++attention;
      if (exact) EXPECT_EQ(l.counts.mma_flops, static_cast<double>(l.ir_product_flops)) << "op " << l.op_index;
      else EXPECT_GE(l.counts.mma_flops, static_cast<double>(l.ir_product_flops)) << "op " << l.op_index;
      std::cout << fmt::format("  attention op {} ({}): {:.0f} mma FLOPs counted, {} of products in the IR ({:.2f}x)\n",
                               l.op_index, l.strategy, l.counts.mma_flops, l.ir_product_flops,
                               l.counts.mma_flops / static_cast<double>(l.ir_product_flops));
    }
  EXPECT_GT(attention, 0u);  // (forward and backward of each layer)
}

void expect_step_matches(int sm, passes::Precision precision, ir::OpKind optimizer = ir::OpKind::Adamw) {
  PtxStep s{sm, precision};
  s.optimizer = optimizer;
  const PtxStepRun run = run_step_on_ptx(s, BERTC_TEST_CACHE);
  for (const KernelCheck& k : run.step)
    EXPECT_TRUE(k.ok) << "step " << k.family << " kernel " << k.kernel << " (" << k.label << "): " << k.problem;
  for (const KernelCheck& k : run.optimizer)
    EXPECT_TRUE(k.ok) << "optimizer " << k.family << " kernel " << k.kernel << ": " << k.problem;
  const size_t checked = run.step.size() + run.optimizer.size();
  EXPECT_GT(checked, 100u);  // (every launch of both graphs: 111 at these sizes in fp32)
  // (the products ran on tensor cores where the precision asks for them: a test that never
  // reached mma would prove nothing about it)
  const auto mma = run.counts.by_op.find(ptx::Op::Mma);
  const uint64_t mmas = mma == run.counts.by_op.end() ? 0 : mma->second;
  const bool simt = precision == passes::Precision::Fp32 || precision == passes::Precision::Fp32Fp16Storage;
  if (simt) EXPECT_EQ(mmas, 0u);
  else EXPECT_GT(mmas, 0u);
  std::cout << fmt::format("{} launches checked from NVRTC's sm_{} PTX ({}, {}); {} thread-instructions executed, {} of "
                           "them mma\n",
                           checked, sm, ir::enum_name(precision), ir::op_info(optimizer).name, run.counts.thread_instructions,
                           mmas);
  // (the optimizer's own kernels ran: a LAMB step has more launches than AdamW's fused one)
  EXPECT_FALSE(run.optimizer.empty());
  // The matrix products' counted FLOPs beside the IR's: never fewer (a product that skipped work
  // is wrong), the same where the tiles divide the shape (the counters count exactly), more where
  // they do not (a kernel computes whole tiles: the padding's work, shown).
  size_t exact = 0;
  for (const PtxLaunch& l : run.launches)
    if (l.family == ir::KernelFamily::Matmul) {
      EXPECT_GE(l.counts.flops, static_cast<double>(l.ir_flops)) << "op " << l.op_index;
      exact += l.counts.flops == static_cast<double>(l.ir_flops);
      std::cout << fmt::format("  {} op {} ({}): {:.0f} FLOPs counted, {} in the IR ({:.2f}x)\n",
                               l.optimizer ? "optimizer" : "step", l.op_index, l.strategy, l.counts.flops, l.ir_flops,
                               l.ir_flops ? l.counts.flops / static_cast<double>(l.ir_flops) : 0.0);
    }
  EXPECT_GT(exact, 0u);
  if (!simt) expect_attention_products_counted(run, false);
}

// Shapes no tile divides (sequence 37, hidden 96 in 3 heads of 32, feed-forward 384, vocabulary
// 997): every kernel's edges, on the P40's SIMT kernels and the A100's tensor-core ones.
void expect_odd_shapes_match(int sm, passes::Precision precision, ir::OpKind optimizer = ir::OpKind::Adamw) {
  PtxStep s{sm, precision};
  s.optimizer = optimizer;
  s.seq = 37, s.predictions = 5, s.hidden = 96, s.heads = 3, s.intermediate = 384, s.vocab = 997;
  const PtxStepRun run = run_step_on_ptx(s, BERTC_TEST_CACHE);
  for (const KernelCheck& k : run.step)
    EXPECT_TRUE(k.ok) << "step " << k.family << " kernel " << k.kernel << " (" << k.label << "): " << k.problem;
  for (const KernelCheck& k : run.optimizer)
    EXPECT_TRUE(k.ok) << "optimizer " << k.family << " kernel " << k.kernel << ": " << k.problem;
  EXPECT_GT(run.step.size() + run.optimizer.size(), 100u);
  std::cout << fmt::format("{} launches at seq 37, hidden 96, vocab 997 from NVRTC's sm_{} PTX ({}); {} thread-instructions\n",
                           run.step.size() + run.optimizer.size(), sm, ir::enum_name(precision),
                           run.counts.thread_instructions);
}

// Attention at 128 tokens a sequence, whole tiles: its products' counted FLOPs are the IR's.
TEST(PtxEmulation, AttentionsProductsCountAsTheIrsWhereTheTilesDivide) {
  PtxStep s{80, passes::Precision::Bf16};
  s.batch = 1, s.seq = 128, s.predictions = 4;
  expect_attention_products_counted(run_step_on_ptx(s, BERTC_TEST_CACHE), true);
}

TEST(PtxEmulation, ShapesNoTileDividesOnSm61MatchTheReference) { expect_odd_shapes_match(61, passes::Precision::Fp32); }
TEST(PtxEmulation, ShapesNoTileDividesOnSm80InBf16MatchTheReference) {
  expect_odd_shapes_match(80, passes::Precision::Bf16);
}
TEST(PtxEmulation, ShapesNoTileDividesOnSm70InFp16MatchTheReference) {
  expect_odd_shapes_match(70, passes::Precision::Fp16);
}
// The other targets' kernels at the same edges: fp16 storage with LAMB's multi-tensor kernels on
// the P40, tf32's converted operands on sm_80, NVRTC 13's sm_90 PTX.
TEST(PtxEmulation, ShapesNoTileDividesOnSm61InFp32Fp16StorageWithLambMatchTheReference) {
  expect_odd_shapes_match(61, passes::Precision::Fp32Fp16Storage, ir::OpKind::Lamb);
}
TEST(PtxEmulation, ShapesNoTileDividesOnSm80InTf32MatchTheReference) {
  expect_odd_shapes_match(80, passes::Precision::Tf32);
}
TEST(PtxEmulation, ShapesNoTileDividesOnSm90InBf16MatchTheReference) {
  expect_odd_shapes_match(90, passes::Precision::Bf16);
}

TEST(PtxEmulation, EveryKernelOfABertTinyStepOnSm61MatchesTheReference) { expect_step_matches(61, passes::Precision::Fp32); }

// sm_80 in bf16: the matrix products and attention on tensor cores (mma.m16n8k16, ldmatrix,
// cp.async), as an A100 would run them.
// The P40's memory-saving form: fp16 storage, fp32 math (cvt between them around every FMA), with
// LAMB's multi-tensor kernels (its trust ratios' norms and the update).
TEST(PtxEmulation, EveryKernelOfABertTinyStepOnSm61InFp32Fp16StorageWithLambMatchesTheReference) {
  expect_step_matches(61, passes::Precision::Fp32Fp16Storage, ir::OpKind::Lamb);
}
TEST(PtxEmulation, EveryKernelOfABertTinyStepOnSm80InBf16MatchesTheReference) {
  expect_step_matches(80, passes::Precision::Bf16);
}

// sm_70 (V100) in fp16: the products on mma.m8n8k4, four quad-pair computations per warp.
TEST(PtxEmulation, EveryKernelOfABertTinyStepOnSm70InFp16MatchesTheReference) {
  expect_step_matches(70, passes::Precision::Fp16);
}

// sm_75 (T4) in fp16: each m16n8k16 product as two mma.m16n8k8, without cp.async.
TEST(PtxEmulation, EveryKernelOfABertTinyStepOnSm75InFp16MatchesTheReference) {
  expect_step_matches(75, passes::Precision::Fp16);
}

// sm_80 in tf32: fp32 tensors, products on mma.m16n8k8 with operands rounded by cvt.rna.tf32.f32.
TEST(PtxEmulation, EveryKernelOfABertTinyStepOnSm80InTf32MatchesTheReference) {
  expect_step_matches(80, passes::Precision::Tf32);
}

// sm_90 (H100, H200) in bf16: NVRTC 13's PTX, the same instructions as sm_80's.
TEST(PtxEmulation, EveryKernelOfABertTinyStepOnSm90InBf16MatchesTheReference) {
  expect_step_matches(90, passes::Precision::Bf16);
}

// Rows of up to 3 examples of 32 tokens in 96 ([train] packing = "pack"): the attention kernels
// read the example ids and skip the tiles between examples (whole tile pairs at 96 tokens, tiles
// of 16 to 64 rows), under the emulator's memory, race and initialization checks, against the
// reference; on the P40's SIMT kernels and the A100's m16n8k16 ones. Fewer attention FLOPs are
// counted than a row of one example computes (the skipped tiles).
void expect_rows_match(int sm, passes::Precision precision) {
  PtxStep s{sm, precision};
  s.rows = true, s.batch = 1, s.seq = 96;
  const PtxStepRun run = run_step_on_ptx(s, BERTC_TEST_CACHE);
  for (const KernelCheck& k : run.step)
    EXPECT_TRUE(k.ok) << "step " << k.family << " kernel " << k.kernel << " (" << k.label << "): " << k.problem;
  for (const KernelCheck& k : run.optimizer)
    EXPECT_TRUE(k.ok) << "optimizer " << k.family << " kernel " << k.kernel << ": " << k.problem;
  size_t attention = 0;
  for (const PtxLaunch& l : run.launches)
    if (l.family == ir::KernelFamily::Attention) {
      ++attention;
      // (three examples of a third of the row each: a third of the square's tile pairs on 32-row
      // tiles, counted 0.35x of the IR's whole square; half on the tensor cores' 64-row forward
      // query tiles, 0.72x. A kernel that skipped nothing computes the whole square: 1x at least,
      // 1.33x with 64-row tiles over 96 rows.)
      EXPECT_LT(l.counts.flops, 0.8 * static_cast<double>(l.ir_flops)) << "op " << l.op_index << ": no tile skipped";
      std::cout << fmt::format("  attention op {} ({}): {:.0f} FLOPs counted, {} in the IR's whole square ({:.2f}x)\n",
                               l.op_index, l.strategy, l.counts.flops, l.ir_flops,
                               l.counts.flops / static_cast<double>(l.ir_flops));
    }
  EXPECT_EQ(attention, 4u);  // (forward and backward of 2 layers)
}

TEST(PtxEmulation, RowsOfSeveralExamplesOnSm61MatchTheReference) { expect_rows_match(61, passes::Precision::Fp32); }
TEST(PtxEmulation, RowsOfSeveralExamplesOnSm80InBf16MatchTheReference) { expect_rows_match(80, passes::Precision::Bf16); }

}  // namespace
}  // namespace bertc::testing

namespace bertc::testing {
namespace {

// A planted bug: in the first kernel holding a line that matches `within` (any kernel when
// empty), the `nth` line (from 0) matching `line` changed by `edit` (every later one too when
// `every_match_in_kernel`); the kernel's name kept, so that only its launches run.
struct Plant {
  std::regex line;
  std::function<std::string(const std::string&)> edit;
  bool every_match_in_kernel = false;
  std::string within;
  int nth = 0;
  std::string kernel;  // (set when applied)

  std::string operator()(const std::string& ptx) {
    std::vector<std::string> lines;
    std::istringstream in(ptx.substr(0, ptx.find('\0')));  // (NVRTC's image ends in a NUL)
    for (std::string text; std::getline(in, text);) lines.push_back(text);
    // Each line's kernel, and the chosen one: the first holding `within` and `line`.
    const std::regex entry_line(R"(^\.visible \.entry (\w+)\()");
    std::vector<std::string> entry_of(lines.size());
    std::map<std::string, std::pair<bool, bool>> holds;  // kernel -> (within, line)
    std::vector<std::string> order;
    std::string entry;
    for (size_t i = 0; i < lines.size(); ++i) {
      if (std::smatch m; std::regex_search(lines[i], m, entry_line)) entry = m[1], order.push_back(entry);
      entry_of[i] = entry;
      if (within.empty() || lines[i].find(within) != std::string::npos) holds[entry].first = true;
      if (std::regex_search(lines[i], line)) holds[entry].second = true;
    }
    for (const std::string& k : order)
      if (kernel.empty() && holds[k].first && holds[k].second) kernel = k;
    if (kernel.empty()) throw std::logic_error("the planted bug's kernel is not in the PTX");
    int seen = 0;
    bool planted = false;
    std::string out;
    for (size_t i = 0; i < lines.size(); ++i) {
      if (entry_of[i] == kernel && std::regex_search(lines[i], line) && seen++ >= nth &&
          (!planted || every_match_in_kernel))
        planted = true, lines[i] = edit(lines[i]);
      out += lines[i] + "\n";
    }
    if (!planted) throw std::logic_error("the planted bug's line is not in its kernel");
    return out;
  }
};

// Runs the step's launches of the kernel `plant` changes (sm_`sm`, `precision`) and returns what
// the first failing one says ("" when every one passed: the bug went unseen).
std::string caught(int sm, passes::Precision precision, Plant plant, uint64_t shrink = 0, int64_t batch = 2) {
  PtxStep s{sm, precision};
  s.batch = batch;
  s.mutate = std::ref(plant);
  s.only = [&](const codegen::KernelSpec& k) { return k.name == plant.kernel; };
  s.shrink_buffers = shrink;
  const PtxStepRun run = run_step_on_ptx(s, BERTC_TEST_CACHE);
  EXPECT_FALSE(run.step.empty() && run.optimizer.empty()) << "no launch of " << plant.kernel << " ran";
  for (const auto* checks : {&run.step, &run.optimizer})
    for (const KernelCheck& k : *checks)
      if (!k.ok) {
        std::cout << fmt::format("planted in {} ({} launches): {}\n", plant.kernel, run.step.size() + run.optimizer.size(),
                                 k.problem.substr(0, 240));
        return k.problem;
      }
  for (const auto* checks : {&run.step, &run.optimizer})
    for (const KernelCheck& k : *checks)
      std::cout << fmt::format("planted in {} ({} {}): the launch passed\n", plant.kernel, k.family, k.label);
  return "";
}

std::string drop(const std::string&) { return ""; }

// Issue 36's mutation set: one planted bug per class, each in the PTX NVRTC made for bertc's own
// kernels, each caught by the checker for it (the same kernels unchanged pass: the tests above).
TEST(PtxEmulation, EveryPlantedBugInBertcsKernelsIsCaught) {
  using passes::Precision;
  // A barrier removed before shared memory is used again (the first barrier after a kernel's first
  // shared store: the matrix kernel's one barrier a tile, between a stage's stores and its reads
  // and before the stage is filled again): racecheck, or initcheck where a thread reads its
  // neighbours' part of the tile before anyone wrote it.
  {
    bool written = false, dropped = false;
    Plant barrier{std::regex(R"(^\s*(st\.shared|bar\.sync))"), [&](const std::string& l) {
                    if (l.find("st.shared") != std::string::npos) return (written = true), l;
                    if (!written || dropped) return l;
                    dropped = true;
                    return std::string();
                  },
                  true};
    const std::string why = caught(61, Precision::Fp32, barrier);
    EXPECT_TRUE(why.find("racecheck: ") != std::string::npos || why.find("initcheck: ") != std::string::npos) << why;
  }
  // The fused attention's third barrier removed (between a warp's writes of the scores' row and
  // other warps' reads of it): racecheck's read-after-write hazard, naming both threads.
  {
    const std::string why =
        caught(61, Precision::Fp32, {std::regex(R"(^\s*bar\.sync)"), drop, false, "E2sf[", 2});
    EXPECT_NE(why.find("racecheck: reads shared memory at offset"), std::string::npos) << why;
    EXPECT_NE(why.find("with no barrier between"), std::string::npos) << why;
  }
  // An ldmatrix row address 2 bytes off its 16-byte alignment: memcheck's misaligned access.
  EXPECT_NE(caught(80, Precision::Bf16, {std::regex(R"(ldmatrix\.sync)"),
                                         [](const std::string& l) { return std::regex_replace(l, std::regex(R"(\[(%r\d+)\])"), "[$1+2]"); }})
                .find("ldmatrix.sync.aligned.m8n8.x4.shared.b16: misaligned: 16 bytes at shared offset 0x2"),
            std::string::npos);
  // An out-of-bounds tail: every buffer 4 bytes shorter than the kernel's last element needs.
  EXPECT_NE(caught(61, Precision::Fp32, {std::regex(R"(st\.global)"), [](const std::string& l) { return l; }}, 4)
                .find("outside every allocation the launch was given"),
            std::string::npos);
  // Two registers of an mma's A fragment swapped (an asm string's operand order): the products
  // come out wrong, caught by the values.
  {
    const std::string why =
        caught(80, Precision::Bf16, {std::regex(R"(mma\.sync)"), [](const std::string& l) {
                                       return std::regex_replace(l, std::regex(R"(\}, \{(%r\d+),(%r\d+),)"), "}, {$2,$1,",
                                                                 std::regex_constants::format_first_only);
                                     }});
    EXPECT_NE(why.find("where the reference has"), std::string::npos) << why;
  }
  // cp.async's data read before its wait (every wait of the kernel removed): the tile's bytes are
  // still being written by the copies when they are read.
  {
    Plant no_wait{std::regex(R"(cp\.async\.wait_group)"), drop, true};
    const std::string why = caught(80, Precision::Bf16, no_wait);
    EXPECT_NE(why.find("shared memory at offset"), std::string::npos) << why;
    EXPECT_NE(why.find("which an async copy of thread"), std::string::npos) << why;
    EXPECT_NE(why.find("is still writing"), std::string::npos) << why;
  }
  // A shuffle whose mask leaves out half the warp.
  {
    const std::string why =
        caught(61, Precision::Fp32, {std::regex(R"(shfl\.sync\.bfly)"), [](const std::string& l) {
                                       return std::regex_replace(l, std::regex(R"(, [^,]+;)"), ", 65535;");
                                     }});
    EXPECT_NE(why.find("shfl.sync.bfly.b32:"), std::string::npos) << why;
    EXPECT_TRUE(why.find("which is not in the shuffle") != std::string::npos ||
                why.find("whose mask leaves it out") != std::string::npos)
        << why;
  }
  // A store to shared memory removed (the kernel's first): its readers read bytes never written.
  {
    const std::string why = caught(61, Precision::Fp32, {std::regex(R"(^\s*st\.shared)"), drop});
    EXPECT_NE(why.find("initcheck: reads shared memory"), std::string::npos) << why;
  }
  // The fences of a reduction's last block removed (every block stores its sums, fences and counts
  // itself with an atomic; the last one fences and reads them all): nothing orders the other
  // blocks' stores before the last block's reads, racecheck of global memory. (The kernel is a
  // loss's: a batch of 16 makes it several blocks of 4 rows, where 2 would make one.)
  {
    Plant no_fence{std::regex(R"(^\s*(membar\.gl|fence\.sc\.gpu|fence\.acq_rel\.gpu))"), drop, true};
    // (the same kernel with its fences, at the same batch: its blocks' hand-over passes)
    Plant unchanged{no_fence.line, [](const std::string& l) { return l; }, true};
    EXPECT_EQ(caught(61, Precision::Fp32, unchanged, 0, 16), "");
    const std::string why = caught(61, Precision::Fp32, no_fence, 0, 16);
    EXPECT_NE(why.find("racecheck: reads global memory at"), std::string::npos) << why;
    EXPECT_NE(why.find("blocks of one launch run in no set order"), std::string::npos) << why;
  }
  // The same reduction's blocks' stores of their sums removed (the stores before its first fence):
  // the last block reads partial sums nothing wrote (a GPU's leftovers in the workspace), initcheck
  // of global memory.
  {
    bool fenced = false;
    Plant no_sums{std::regex(R"(^\s*(st\.global|membar\.gl|fence\.sc\.gpu|fence\.acq_rel\.gpu))"),
                  [&](const std::string& l) {
                    if (l.find("st.global") == std::string::npos) return (fenced = true), l;
                    return fenced ? l : std::string();
                  },
                  true, "membar.gl"};
    const std::string why = caught(61, Precision::Fp32, no_sums, 0, 16);
    EXPECT_NE(why.find("initcheck: reads global memory at"), std::string::npos) << why;
  }
  // A block's shared memory past what the arch allows (a static array of 60 KiB on a P40).
  {
    const std::string why =
        caught(61, Precision::Fp32, {std::regex(R"(^\s*\.shared \.align \d+ \.b8 \w+\[\d+\])"), [](const std::string& l) {
                                       return std::regex_replace(l, std::regex(R"(\[\d+\])"), "[61440]");
                                     }});
    EXPECT_NE(why.find("a launch Tesla P40 (sm_61) refuses: 61440 bytes of static shared memory"), std::string::npos)
        << why;
  }
}

}  // namespace
}  // namespace bertc::testing
