// NVRTC compilation of prelude kernels for every arch bertc targets (CUDA 13's NVRTC from sm_75,
// the CUDA 12 wheel's for sm_61 and sm_70), with ptxas figures, the disk cache (hits, corrupt
// entries rebuilt) and a failing compile that reports NVRTC's log and keeps the source.
#include <gtest/gtest.h>

#include <fstream>

#include "cuda/nvrtc_compiler.h"
#include "prelude_kernels.h"

namespace bertc::codegen {
namespace {

std::vector<KernelSource> prelude_kernels() {
  std::vector<KernelSource> k;
  for (const char* name : testing::kPreludeKernelNames) k.push_back({name, testing::kPreludeKernels});
  return k;
}

TEST(Nvrtc, PreludeKernelsCompileForEveryArchWithoutSpills) {
  for (int arch : {61, 70, 75, 80, 86, 89, 90}) {
    const cuda::NvrtcCompiler compiler = cuda::NvrtcCompiler::for_arch(arch);
    EXPECT_FALSE(compiler.ptx()) << "sm_" << arch << " should get a cubin";
    EXPECT_EQ(compiler.version().substr(0, 3), arch < 75 ? "12." : "13.") << compiler.library();
    const std::vector<GpuImage> images = cuda::compile_all(compiler, prelude_kernels(), std::nullopt);
    for (const GpuImage& g : images) {
      EXPECT_GT(g.image.size(), 1000u) << g.name;
      EXPECT_EQ(g.image.substr(0, 4), "\x7f" "ELF") << g.name << ": a cubin is an ELF file";
      EXPECT_GT(g.ptxas.registers, 0) << g.name << " sm_" << arch;
      EXPECT_EQ(g.ptxas.spill_store_bytes + g.ptxas.spill_load_bytes, 0) << g.name << " sm_" << arch;
    }
    // block_sums declares 32 floats of shared memory.
    EXPECT_EQ(images[0].ptxas.shared_bytes, 128) << "sm_" << arch;
  }
}

// With the driver's version known, only an NVRTC whose output that driver loads: the CUDA 13
// NVRTC's cubins need a CUDA 13 driver; a CUDA 12.8 driver takes the 12.9 NVRTC's cubins (minor
// version compatibility), and PTX only from an NVRTC no newer than itself.
TEST(Nvrtc, ChoosesAnNvrtcWhoseOutputTheDriverLoads) {
  EXPECT_EQ(cuda::NvrtcCompiler::for_arch(80, 13000).version(), "13.0");
  const cuda::NvrtcCompiler on_12_8 = cuda::NvrtcCompiler::for_arch(80, 12080);
  EXPECT_EQ(on_12_8.version().substr(0, 3), "12.") << on_12_8.library();
  EXPECT_FALSE(on_12_8.ptx());
  try {
    cuda::NvrtcCompiler::for_arch(80, 11080);
    FAIL() << "an NVRTC newer than a CUDA 11.8 driver was chosen";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("in a form the driver (CUDA 11.8) loads"), std::string::npos) << e.what();
  }
}

// What a compiled program's images need of the driver that loads them (a .bertx carries the
// NVRTC version): cubins within the driver's CUDA major version, PTX no newer than the driver.
TEST(Nvrtc, ACompiledProgramsImagesAgainstTheDriver) {
  EXPECT_TRUE(cuda::driver_loads("13.0", 13000, false));
  EXPECT_TRUE(cuda::driver_loads("13.0", 13020, true));
  EXPECT_FALSE(cuda::driver_loads("13.0", 12080, false));  // a CUDA 13 cubin on a CUDA 12.8 driver
  EXPECT_TRUE(cuda::driver_loads("12.9", 12080, false));   // minor version compatibility
  EXPECT_FALSE(cuda::driver_loads("12.9", 12080, true));   // ... which PTX does not have
  EXPECT_TRUE(cuda::driver_loads("12.9", 0, true));        // no driver asked: the load says
  EXPECT_TRUE(cuda::driver_loads("unknown", 12080, true));
}

TEST(Nvrtc, CacheHitsAndRebuildsCorruptEntries) {
  const std::filesystem::path cache = std::filesystem::path(BERTC_TEST_CACHE) / "nvrtc-cache-test";
  std::filesystem::remove_all(cache);
  const cuda::NvrtcCompiler compiler = cuda::NvrtcCompiler::for_arch(80);
  CompileStats cold, warm, repaired;
  const auto first = cuda::compile_all(compiler, prelude_kernels(), cache, &cold);
  EXPECT_EQ(cold.cache_hits, 0u);
  const auto second = cuda::compile_all(compiler, prelude_kernels(), cache, &warm);
  EXPECT_EQ(warm.cache_hits, first.size());
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_TRUE(second[i].from_cache);
    EXPECT_EQ(second[i].image, first[i].image);
    EXPECT_EQ(second[i].ptxas.registers, first[i].ptxas.registers);
  }
  // Flip one byte in the middle of one entry and truncate another: both are rebuilt.
  std::vector<std::filesystem::path> entries;
  for (const auto& e : std::filesystem::directory_iterator(cache / "nvrtc")) entries.push_back(e.path());
  ASSERT_EQ(entries.size(), first.size());
  {
    std::fstream f(entries[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(std::filesystem::file_size(entries[0]) / 2));
    f.put('\x5a');
  }
  std::filesystem::resize_file(entries[1], 10);
  const auto third = cuda::compile_all(compiler, prelude_kernels(), cache, &repaired);
  EXPECT_EQ(repaired.corrupt_entries, 2u);
  EXPECT_EQ(repaired.cache_hits, first.size() - 2);
  for (size_t i = 0; i < first.size(); ++i) EXPECT_EQ(third[i].image, first[i].image);
}

TEST(Nvrtc, AFailedCompileCarriesTheLogAndTheSource) {
  const std::filesystem::path cache = std::filesystem::path(BERTC_TEST_CACHE) / "nvrtc-fail-test";
  const cuda::NvrtcCompiler compiler = cuda::NvrtcCompiler::for_arch(75);
  const KernelSource broken{"broken", "#include \"bx.h\"\nBX_KERNEL void broken(float* x) { x[0] = undefined_name; }\n"};
  try {
    cuda::compile_all(compiler, {broken}, cache);
    FAIL() << "no error";
  } catch (const KernelCompileError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("undefined_name"), std::string::npos) << what;  // NVRTC's log
    EXPECT_NE(what.find((cache / "failed" / "broken.cu").string()), std::string::npos) << what;
    EXPECT_TRUE(std::filesystem::exists(cache / "failed" / "broken.cu"));
  }
}

TEST(Nvrtc, PtxasLogParsing) {
  const std::string log =
      "ptxas info    : Compiling entry function 'other' for 'sm_80'\n"
      "ptxas info    : Used 7 registers, 4096 bytes smem\n"
      "ptxas info    : Compiling entry function 'k' for 'sm_80'\n"
      "ptxas info    : Function properties for k\n"
      "ptxas         .     16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 512 bytes smem, 368 bytes cmem[0]\n";
  const PtxasInfo i = cuda::parse_ptxas_log(log, "k");
  EXPECT_EQ(i.registers, 40);
  EXPECT_EQ(i.shared_bytes, 512);
  EXPECT_EQ(i.stack_bytes, 16);
  EXPECT_EQ(i.spill_store_bytes, 8);
  EXPECT_EQ(i.spill_load_bytes, 4);
  EXPECT_EQ(cuda::parse_ptxas_log(log, "other").registers, 7);
  EXPECT_EQ(cuda::parse_ptxas_log(log, "absent").registers, 0);
}

// The main loop is the loop with the most math of its own: not a loop without math, not a forward
// jump, and not the instructions of a loop nested inside it; predicates and .v4 forms count.
TEST(PtxLoop, CountsTheBusiestLoopsOwnMathAndSharedLoads) {
  const std::string ptx = R"(
	ld.shared.f32 	%f1, [%r1];          // before any loop: not counted
$L__BB0_1:                              // the outer loop
	ld.shared.v4.f32 	{%f1, %f2, %f3, %f4}, [%r2];
	fma.rn.f32 	%f5, %f1, %f2, %f5;
	fma.rn.f32 	%f6, %f3, %f4, %f6;
	@%p1 bra 	$L__BB0_3;              // a forward jump is no loop
	fma.rn.f32 	%f7, %f3, %f4, %f7;
$L__BB0_3:
$L__BB0_2:                              // a nested loop: its own, not the outer one's
	ld.shared.u32 	%r5, [%r4];
	ld.shared.u32 	%r6, [%r4+4];
	fma.rn.f32 	%f8, %f1, %f2, %f8;
	@%p2 bra 	$L__BB0_2;
	ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1, %r2, %r3, %r4}, [%r9];
	@%p3 bra.uni 	$L__BB0_1;
$L__BB0_4:                              // a loop without math
	ld.shared.f32 	%f9, [%r8];
	@%p4 bra 	$L__BB0_4;
	ret;
)";
  const LoopMix m = main_loop_mix(ptx);
  EXPECT_EQ(m.math, 3);
  EXPECT_EQ(m.shared_loads, 2);
  EXPECT_DOUBLE_EQ(m.math_per_load(), 1.5);
  EXPECT_FALSE(main_loop_mix("\tfma.rn.f32 %f1, %f2, %f3, %f4;\n\tret;\n").found());  // no loop at all
}

}  // namespace
}  // namespace bertc::codegen
