// Compiled programs: every kernel of a BERT-base training step compiles with NVRTC for each arch
// bertc targets, at the precision that arch trains in, without register spills; a .bertx file
// reads back to the same program.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <set>

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <xxhash.h>

#include "codegen/bertx_file.h"
#include "codegen/gradient_casts.h"
#include "codegen/render.h"
#include "cuda/compile_program.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "frontend/bert.h"
#include "passes/targets.h"
#include "run_config/config.h"
#include "support/options_json.h"

namespace bertc::codegen {
namespace {

struct Compiled {
  passes::TrainingProgram program;
  CompiledProgram compiled;
};

Compiled compile_for(const std::string& config, const std::string& arch, const std::string& matmul = "auto",
                     const std::string& precision = "auto") {
  run_config::Config c = run_config::load_config(std::string(BERTC_SOURCE_DIR) + "/examples/" + config);
  c.compile.arch = passes::Arch::parse(arch);
  c.compile.matmul = ir::enum_named<passes::MatmulPolicy>(matmul);
  c.compile.precision = ir::enum_named<passes::Precision>(precision);
  c.compile = passes::resolve_options(c.compile, passes::Arch::none());  // precision auto: what that arch trains in
  Compiled out;
  out.program = passes::compile_training(frontend::build_bert_pretraining(c.model_settings()), c.compile, c.train);
  cuda::CompileSettings s;
  s.cache = std::filesystem::path(BERTC_TEST_CACHE);
  out.compiled = cuda::compile_program(out.program, c.compile, c.name, "", s);
  return out;
}

TEST(CompiledProgram, BertBaseCompilesForEveryArchWithoutSpills) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"sm_61", "auto"}, {"sm_70", "auto"}, {"sm_75", "auto"}, {"sm_80", "auto"},
      {"sm_86", "auto"}, {"sm_90", "auto"}, {"sm_80", "tf32"}, {"sm_90", "tf32"}};
  for (const auto& [arch, precision] : cases) {
    const Compiled c = compile_for("bert-base.toml", arch, "auto", precision);
    const CompiledProgram& p = c.compiled;
    std::set<std::string> names;
    for (const GraphKernels* g : {&p.step, &p.optimizer})
      for (const KernelSpec& k : g->kernels)
        if (!k.source.empty()) names.insert(k.name);  // cuBLAS-only launches have no image
    EXPECT_EQ(p.images.size(), names.size()) << arch;
    EXPECT_GT(names.size(), 50u) << arch;
    // Attention kernels fit 3 blocks an SM: at most 168 registers (checked by ptxas through the
    // launch bounds; with the spill check below, without spilling: sm_70's backward was 242).
    for (const GraphKernels* g : {&p.step, &p.optimizer})
      for (const KernelSpec& k : g->kernels)
        if (k.family == ir::KernelFamily::Attention) {
          EXPECT_EQ(k.min_blocks_per_sm, 3) << arch << " " << k.label;
          EXPECT_LE(p.images.at(k.name).ptxas.registers, 168) << arch << " " << k.label;
        }
    for (const auto& [name, image] : p.images) {
      EXPECT_FALSE(image.ptx) << arch << " " << name << ": a cubin is expected for every arch of the table";
      EXPECT_GT(image.ptxas.registers, 0) << arch << " " << name;
      EXPECT_EQ(image.ptxas.spill_store_bytes + image.ptxas.spill_load_bytes, 0) << arch << " " << name << " spills";
      EXPECT_LE(image.ptxas.shared_bytes, 48 * 1024) << arch << " " << name << ": over the static shared limit";
    }
    std::printf("%s (%s): %zu distinct kernels, %zu launches, compiled in %.2f s, %zu from the cache\n", arch,
                std::string(ir::enum_name(p.options.precision)).c_str(), names.size(), p.step.kernels.size() + p.optimizer.kernels.size(),
                p.stats.seconds, p.stats.cache_hits);
  }
}

// LAMB's optimizer step, lowered (passes/lower_lamb.h), is three multi-tensor kernels on every
// arch: the gradient norm, the moments with each tensor's two norms, the update by trust ratio.
// Only the optimizer graph's kernels are compiled: the step's are AdamW's, which the test above
// compiles (compiling them again here, from a cold cache beside that test, ran past CI's 15-minute limit).
TEST(CompiledProgram, LambOptimizerStepCompilesForEveryArch) {
  for (const char* arch : {"sm_61", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"}) {
    run_config::Config c = run_config::load_config(std::string(BERTC_SOURCE_DIR) + "/examples/bert-base.toml");
    c.train.optimizer.kind = ir::OpKind::Lamb;
    c.compile.arch = passes::Arch::parse(arch);
    c.compile = passes::resolve_options(c.compile, passes::Arch::none());
    const passes::TrainingProgram p = passes::compile_training(frontend::build_bert_pretraining(c.model_settings()), c.compile, c.train);
    const GraphKernels optimizer = render_graph(p.optimizer, render_target(c.compile));
    const std::vector<KernelSpec>& k = optimizer.kernels;
    ASSERT_EQ(k.size(), 3u) << arch;
    EXPECT_EQ(k[0].family, ir::KernelFamily::MultiTensorNorm) << arch;
    EXPECT_EQ(k[1].family, ir::KernelFamily::MultiTensorNorm) << arch;
    EXPECT_EQ(k[2].family, ir::KernelFamily::MultiTensorUpdate) << arch;
    std::vector<KernelSource> sources;
    for (const KernelSpec& kernel : k) sources.push_back({kernel.name, device_source(kernel)});
    const cuda::NvrtcCompiler compiler = cuda::NvrtcCompiler::for_arch(c.compile.arch.sm());
    const std::vector<GpuImage> images = cuda::compile_all(compiler, sources, std::filesystem::path(BERTC_TEST_CACHE));
    ASSERT_EQ(images.size(), 3u) << arch;
    for (const GpuImage& image : images) {
      EXPECT_GT(image.ptxas.registers, 0) << arch << " " << image.name;
      EXPECT_EQ(image.ptxas.spill_store_bytes + image.ptxas.spill_load_bytes, 0) << arch << " " << image.name << " spills";
    }
  }
}

// Layers share their kernels: bert-base's 12 attention layers launch 2 distinct attention kernels
// (forward, backward) 24 times, each launch with its own dropout offset as an integer parameter,
// and the offsets of the 24 launches are all different (each layer's dropout draws its own mask).
TEST(CompiledProgram, LayersShareKernelsThatTakeTheirDropoutOffsets) {
  run_config::Config c = run_config::load_config(std::string(BERTC_SOURCE_DIR) + "/examples/bert-base.toml");
  c.compile.arch = passes::Arch::parse("sm_80");
  c.compile = passes::resolve_options(c.compile, passes::Arch::none());
  const passes::TrainingProgram p = passes::compile_training(frontend::build_bert_pretraining(c.model_settings()), c.compile, c.train);
  const GraphKernels step = render_graph(p.step, render_target(c.compile));
  std::set<std::string> attention_kernels, all_kernels;
  std::set<int64_t> attention_offsets;
  size_t attention_launches = 0;
  for (const KernelSpec& k : step.kernels) {
    all_kernels.insert(k.name);
    if (k.family != ir::KernelFamily::Attention) continue;
    ++attention_launches;
    attention_kernels.insert(k.name);
    for (const KernelParam& param : k.params)
      if (param.kind == ParamKind::Integer) attention_offsets.insert(param.integer);
    EXPECT_EQ(k.source.find("BX_DROPOUT_OFFSET"), std::string::npos) << k.name;
  }
  EXPECT_EQ(attention_launches, 24u);
  EXPECT_EQ(attention_kernels.size(), 2u);
  EXPECT_EQ(attention_offsets.size(), 12u);  // the backward draws the forward's mask: the same offset
  EXPECT_LT(all_kernels.size(), 100u);       // 148 when each layer's offsets were in its source
}

// The PTX of bert-tiny's matrix kernels (each GEMM and attention kernel) holds the instructions
// of the arch's strategy and none of the others': no mma on sm_61, m8n8k4 without ldmatrix on
// sm_70, m16n8k16 with ldmatrix and cp.async on sm_80 and sm_90; no local memory. Every kernel
// has launch bounds.
TEST(CompiledProgram, MatrixKernelsUseTheirArchsInstructions) {
  struct Expect {
    const char* arch;
    const char* precision;
    std::vector<std::string> present, absent;
  };
  const std::vector<Expect> cases = {
      {"sm_61", "fp32", {"fma.rn.f32"}, {"mma.sync", "ldmatrix", "cp.async"}},
      {"sm_61", "fp16", {"fma.rn.f32"}, {"mma.sync", "ldmatrix", "cp.async", "fma.rn.f16"}},
      {"sm_70", "fp16", {"mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32"}, {"ldmatrix", "cp.async", "m16n8k16"}},
      {"sm_80", "bf16", {"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "ldmatrix.sync.aligned", "cp.async"}, {"m8n8k4"}},
      {"sm_90", "fp16", {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "ldmatrix.sync.aligned", "cp.async"}, {"m8n8k4"}},
      // tf32: m16n8k8 on inputs rounded by cvt.rna; the attention backward (head size 64) runs simt.
      // (what a tf32 kernel holds is checked below, per kernel).
      {"sm_80", "tf32", {}, {"m8n8k4", "m16n8k16", "ldmatrix"}},
  };
  for (const Expect& e : cases) {
    run_config::Config c = run_config::load_config(std::string(BERTC_SOURCE_DIR) + "/examples/bert-tiny.toml");
    c.compile.arch = passes::Arch::parse(e.arch);
    c.compile.precision = ir::enum_named<passes::Precision>(e.precision);
    c.compile = passes::resolve_options(c.compile, passes::Arch::none());
    const passes::TrainingProgram p =
        passes::compile_training(frontend::build_bert_pretraining(c.model_settings()), c.compile, c.train);
    const cuda::NvrtcCompiler ptx = cuda::NvrtcCompiler::ptx_for_arch(std::stoi(std::string(e.arch).substr(3)));
    std::set<std::string> families;
    std::set<std::string> done;
    int simt_gemms = 0, tf32_kernels = 0;
    const RenderTarget target{ptx.arch(), passes::MatmulPolicy::Auto, {}, c.compile.precision == passes::Precision::Tf32};
    for (const KernelSpec& k : render_graph(p.step, target).kernels) {
      // Every kernel declares the block size it is launched with (registers fit, always).
      if (!k.source.empty()) {
        EXPECT_NE(k.source.find(fmt::format("BX_KERNEL BX_LAUNCH_BOUNDS({}, {}) void {}(", k.block.x * k.block.y * k.block.z,
                                            k.min_blocks_per_sm, k.name)),
                  std::string::npos)
            << k.label << ": " << k.source.substr(0, 200);
      }
      if (k.strategy.empty() || !done.insert(k.name).second) continue;
      families.insert(std::string(ir::enum_name(k.family)));
      const GpuImage image = ptx.compile({k.name, device_source(k)}, std::filesystem::path(BERTC_TEST_CACHE) / "failed");
      ASSERT_TRUE(image.ptx);
      for (const std::string& s : e.present)
        EXPECT_NE(image.image.find(s), std::string::npos) << e.arch << " " << e.precision << " " << ir::enum_name(k.family) << ": no " << s;
      for (const std::string& s : e.absent)
        EXPECT_EQ(image.image.find(s), std::string::npos) << e.arch << " " << e.precision << " " << ir::enum_name(k.family) << ": " << s;
      // Accumulators and fragments stay in registers: PTX declares no local memory (a dynamically
      // indexed array would be one, slow wherever ptxas cannot undo it).
      EXPECT_EQ(image.image.find(".local"), std::string::npos) << e.arch << " " << e.precision << " " << k.label
                                                                << ": local memory in " << ir::enum_name(k.family);
      // The simt GEMM's main loop reads shared memory 128 bits at a time (64 bits for 16-bit
      // storage): 16 FFMA per load for its 8 x 8 lane tiles (it was 4 with scalar loads, which
      // capped issue near 75% of FP32 peak). The figure is the compile's, read back from the PTX.
      if (std::string(e.precision) == "tf32" && k.strategy == "tf32") {
        EXPECT_NE(image.image.find("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"), std::string::npos) << k.label;
        EXPECT_NE(image.image.find("cvt.rna.tf32.f32"), std::string::npos) << k.label;
        ++tf32_kernels;
      }
      const LoopMix loop = main_loop_mix(image.image);
      EXPECT_EQ(loop.math, image.main_loop.math) << k.label;
      if (k.family == ir::KernelFamily::Matmul && k.strategy == "simt") {
        EXPECT_GE(loop.math_per_load(), 12.0) << e.arch << " " << e.precision << " " << k.label << ": " << loop.math
                                              << " fma per " << loop.shared_loads << " shared loads";
        EXPECT_NE(image.image.find(std::string("ld.shared.v4.") + (e.precision == std::string("fp32") ? "f32" : "u16")),
                  std::string::npos)
            << k.label;
        ++simt_gemms;
      }
    }
    EXPECT_EQ(families, (std::set<std::string>{"attention", "matmul"})) << e.arch;
    if (std::string(e.arch) == "sm_61") {
      EXPECT_GT(simt_gemms, 0) << e.precision;
    }
    if (std::string(e.precision) == "tf32") {
      EXPECT_GT(tf32_kernels, 0);
    }
  }
}

// With every matmul through cuBLAS, so that the file holds library records and workspaces too.
TEST(CompiledProgram, BertxReadsBackTheSameProgram) {
  const Compiled c = compile_for("bert-tiny.toml", "sm_75", "library");
  const std::filesystem::path path = std::filesystem::path(BERTC_TEST_CACHE) / "tiny.bertx";
  write_bertx(path, c.compiled);
  const CompiledProgram r = read_bertx(path);
  EXPECT_EQ(r.model, c.compiled.model);
  EXPECT_EQ(r.options.precision, passes::Precision::Fp16);
  // Every option that shapes the program comes back as it was written (from options.def).
  EXPECT_EQ(support::options_json(passes::compile_option_specs(), r.options),
            support::options_json(passes::compile_option_specs(), c.compiled.options));
  EXPECT_EQ(r.options.arch.sm(), 75);
  EXPECT_EQ(r.options.matmul, passes::MatmulPolicy::Library);
  EXPECT_EQ(r.step_ir, c.compiled.step_ir);
  EXPECT_EQ(r.step.arena.offset_of, c.compiled.step.arena.offset_of);
  EXPECT_EQ(r.optimizer.arena.bytes, c.compiled.optimizer.arena.bytes);
  // Each image's figures come back too (registers from ptxas, the main loop's mix from its PTX).
  ASSERT_EQ(r.images.size(), c.compiled.images.size());
  int with_loops = 0;
  for (const auto& [name, g] : c.compiled.images) {
    const GpuImage& back = r.images.at(name);
    EXPECT_EQ(back.image, g.image) << name;
    EXPECT_EQ(back.ptxas.registers, g.ptxas.registers) << name;
    EXPECT_EQ(back.main_loop.math, g.main_loop.math) << name;
    EXPECT_EQ(back.main_loop.shared_loads, g.main_loop.shared_loads) << name;
    with_loops += g.main_loop.found();
  }
  EXPECT_GT(with_loops, 0);
  for (auto [a, b] : {std::pair{&r.step, &c.compiled.step}, std::pair{&r.optimizer, &c.compiled.optimizer}}) {
    ASSERT_EQ(a->kernels.size(), b->kernels.size());
    for (size_t i = 0; i < a->kernels.size(); ++i) {
      const KernelSpec &x = a->kernels[i], &y = b->kernels[i];
      EXPECT_EQ(x.name, y.name);
      EXPECT_EQ(x.family, y.family);
      EXPECT_EQ(x.source, y.source);
      EXPECT_EQ(x.op_index, y.op_index);
      EXPECT_EQ(x.grid.x, y.grid.x);
      EXPECT_EQ(x.grid.y * x.grid.z, y.grid.y * y.grid.z);
      EXPECT_EQ(x.strategy, y.strategy);
      ASSERT_EQ(x.library.has_value(), y.library.has_value());
      if (x.library) {
        EXPECT_EQ(library_text(*x.library), library_text(*y.library));
      }
      EXPECT_EQ(x.block.x * x.block.y, y.block.x * y.block.y);
      ASSERT_EQ(x.params.size(), y.params.size());
      for (size_t j = 0; j < x.params.size(); ++j) {
        EXPECT_EQ(x.params[j].c_type, y.params[j].c_type);
        EXPECT_EQ(x.params[j].table.size(), y.params[j].table.size());
      }
    }
  }
  // Buffers are named by IR labels in the file: they resolve to the same values of the re-read IR.
  const ir::Graph step = ir::parse(r.step_ir);
  const auto labels = ir::value_labels(step), original = ir::value_labels(c.program.step);
  size_t library = 0;
  for (size_t i = 0; i < r.step.kernels.size(); ++i) {
    if (const auto& g = r.step.kernels[i].library) {
      ++library;
      EXPECT_EQ(labels[g->a], original[c.compiled.step.kernels[i].library->a]);
      EXPECT_EQ(labels[g->b], original[c.compiled.step.kernels[i].library->b]);
      if (!g->to_workspace) {
        EXPECT_EQ(labels[g->c], original[c.compiled.step.kernels[i].library->c]);
      }
    }
    for (size_t j = 0; j < r.step.kernels[i].params.size(); ++j) {
      if (r.step.kernels[i].params[j].kind != ParamKind::Buffer) continue;
      EXPECT_EQ(labels[r.step.kernels[i].params[j].value], original[c.compiled.step.kernels[i].params[j].value]);
    }
  }
  EXPECT_GT(library, 10u);
  for (const auto& [name, image] : c.compiled.images) EXPECT_EQ(r.images.at(name).image, image.image) << name;
}


// A program for fp16/bf16 gradient compression carries its gradient casts' images (the trainer
// launches them beside the graphs, on a GPU with NVRTC unreachable too), through a .bertx as well.
TEST(CompiledProgram, CarriesTheImagesOfTheKernelsLaunchedBesideTheGraphs) {
  run_config::Config c = run_config::load_config(std::string(BERTC_SOURCE_DIR) + "/examples/bert-tiny.toml");
  c.compile.arch = passes::Arch::parse("sm_80");
  c.compile = passes::resolve_options(c.compile, passes::Arch::none());
  const passes::TrainingProgram program = passes::compile_training(frontend::build_bert_pretraining(c.model_settings()), c.compile, c.train);
  cuda::CompileSettings s;
  s.cache = std::filesystem::path(BERTC_TEST_CACHE);
  std::set<std::string> casts;
  for (auto& [n, pair] : gradient_casts_for(program.step, ir::DType::BF16)) {
    casts.insert({pair.pack.name, pair.unpack.name});
    s.runtime_kernels.push_back(std::move(pair.pack));
    s.runtime_kernels.push_back(std::move(pair.unpack));
  }
  // Named by source, which holds the block size but not the grid: sizes of 256 and more share a
  // pair, smaller ones (bert-tiny's biases and norms are 128 wide) get their own.
  ASSERT_GE(casts.size(), 4u);
  const CompiledProgram compiled = cuda::compile_program(program, c.compile, c.name, "", s);
  const std::filesystem::path path = std::filesystem::path(BERTC_TEST_CACHE) / "tiny-casts.bertx";
  write_bertx(path, compiled);
  const CompiledProgram back = read_bertx(path);
  for (const std::string& name : casts) {
    ASSERT_TRUE(compiled.images.count(name)) << name;
    ASSERT_TRUE(back.images.count(name)) << name;
    EXPECT_EQ(back.images.at(name).image, compiled.images.at(name).image) << name;
  }
}

// A file in another format version (its header intact, checksum and all) is refused with the fix.
TEST(CompiledProgram, BertxOfAnotherFormatVersionIsRefused) {
  const Compiled c = compile_for("bert-tiny.toml", "sm_75");
  const std::filesystem::path path = std::filesystem::path(BERTC_TEST_CACHE) / "old.bertx";
  write_bertx(path, c.compiled);
  std::ifstream in(path, std::ios::binary);
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  in.close();
  uint64_t size = 0;
  std::memcpy(&size, bytes.data() + 8, 8);
  nlohmann::json header = nlohmann::json::parse(bytes.substr(24, size));
  header["version"] = 1;
  const std::string text = header.dump();
  const uint64_t new_size = text.size(), sum = XXH3_64bits(text.data(), text.size());
  std::string out = bytes.substr(0, 8);
  out.append(reinterpret_cast<const char*>(&new_size), 8).append(reinterpret_cast<const char*>(&sum), 8);
  std::ofstream(path, std::ios::binary) << out + text + bytes.substr(24 + size);
  try {
    read_bertx(path);
    FAIL() << "a format-1 file was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("it is format 1, written by another bertc version (this one reads format 5). "
                                         "Make it again with bertc compile"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace bertc::codegen
