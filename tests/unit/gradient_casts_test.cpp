// The kernels that round gradients to 16 bits around NCCL's sums (codegen/gradient_casts): on the
// Host device (the same source the GPU compiles) against the host path's rounding bit for bit,
// and compiled by NVRTC for the archs bertc targets.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "codegen/gradient_casts.h"
#include "cuda/nvrtc_compiler.h"
#include "ir/float16.h"
#include "runtime/host_device.h"

namespace bertc::codegen {
namespace {

// Gradients of every kind the casts meet: ordinary, below fp16's smallest normal, below its
// smallest subnormal once divided by the ranks, above its largest (inf after rounding: the
// overflow that loss scaling skips), rounding ties, signed zero.
std::vector<float> gradients(size_t n) {
  std::vector<float> g(n);
  const float special[] = {1.0f, -0.3333f, 6.1e-5f, -3e-8f, 1e-9f, 70000.0f, -2e5f, 1.00048828125f, -0.0f, 3.0e38f};
  for (size_t i = 0; i < n; ++i)
    g[i] = i < std::size(special) ? special[i] : std::sin(0.37f * float(i)) * std::pow(10.0f, float(i % 9) - 6.0f);
  return g;
}

struct Run {
  std::vector<uint16_t> packed;
  std::vector<float> unpacked;
};

// pack then unpack on the Host device; `rendered_for`: the element count the kernels' grid was
// made for (a smaller one than n leaves the rest to the grid-stride loop).
Run run_on_host(ir::DType half, const std::vector<float>& g, int64_t ranks, int64_t rendered_for) {
  runtime::HostDevice device(BERTC_TEST_CACHE);
  const GradientCasts casts = gradient_casts(half, rendered_for);
  device.load({&casts.pack, &casts.unpack});
  const size_t n = g.size();
  void* full = device.allocate(4 * n, "gradients");
  void* packed = device.allocate(2 * n, "16-bit shares");
  void* back = device.allocate(4 * n, "sums");
  device.upload(full, g.data(), 4 * n);
  int64_t count = static_cast<int64_t>(n);
  void* pack_args[] = {&full, &packed, &count, &ranks};
  device.launch(casts.pack, pack_args);
  void* unpack_args[] = {&packed, &back, &count, &ranks};
  device.launch(casts.unpack, unpack_args);
  device.synchronize();
  Run r{std::vector<uint16_t>(n), std::vector<float>(n)};
  device.download(r.packed.data(), packed, 2 * n);
  device.download(r.unpacked.data(), back, 4 * n);
  return r;
}

void expect_host_path_bits(ir::DType half, int64_t ranks, size_t n, int64_t rendered_for) {
  const std::vector<float> g = gradients(n);
  const Run r = run_on_host(half, g, ranks, rendered_for);
  const bool f16 = half == ir::DType::F16;
  size_t overflowed = 0;
  for (size_t i = 0; i < n; ++i) {
    // What distributed::GradientExchange packs and unpacks on the host.
    const float share = g[i] / static_cast<float>(ranks);
    const uint16_t bits = f16 ? ir::f16_bits(share) : ir::bf16_bits(share);
    const float sum = static_cast<float>(ranks) * (f16 ? ir::from_f16_bits(bits) : ir::from_bf16_bits(bits));
    ASSERT_EQ(r.packed[i], bits) << "element " << i << " = " << g[i] << ", ranks " << ranks;
    uint32_t got, want;
    std::memcpy(&got, &r.unpacked[i], 4);
    std::memcpy(&want, &sum, 4);
    ASSERT_EQ(got, want) << "element " << i << " = " << g[i] << ", ranks " << ranks;
    overflowed += std::isinf(sum);
  }
  // fp16 (largest 65504) turns 3e38 / any ranks, -2e5 / 1 or 3 and 70000 / 1 into inf; bf16
  // (fp32's range) none.
  const size_t fp16_overflows = ranks == 1 ? 3 : ranks <= 3 ? 2 : 1;
  EXPECT_EQ(overflowed, f16 ? fp16_overflows : 0u) << "ranks " << ranks;
}

TEST(GradientCasts, Fp16RoundsEachRanksShareAsTheHostPathDoes) {
  for (int64_t ranks : {1, 3, 8}) expect_host_path_bits(ir::DType::F16, ranks, 1000, 1000);
}

TEST(GradientCasts, Bf16RoundsEachRanksShareAsTheHostPathDoes) {
  for (int64_t ranks : {1, 3, 8}) expect_host_path_bits(ir::DType::BF16, ranks, 1000, 1000);
}

// A tensor larger than the grid was made for: the loop strides over the rest (one block here).
TEST(GradientCasts, TheGridStrideLoopCoversMoreThanTheGrid) {
  expect_host_path_bits(ir::DType::F16, 2, 5000, 200);
}

TEST(GradientCasts, OnlyF16AndBf16) {
  EXPECT_THROW(gradient_casts(ir::DType::F32, 10), std::logic_error);
}

// The same sources compile for every arch bertc targets, as cubins without spills.
TEST(GradientCasts, CompileForEveryArch) {
  for (ir::DType half : {ir::DType::F16, ir::DType::BF16}) {
    const GradientCasts casts = gradient_casts(half, 1 << 20);
    for (int arch : {61, 70, 80, 90}) {
      const cuda::NvrtcCompiler compiler = cuda::NvrtcCompiler::for_arch(arch);
      const std::vector<GpuImage> images = cuda::compile_all(
          compiler, {{casts.pack.name, device_source(casts.pack)}, {casts.unpack.name, device_source(casts.unpack)}},
          std::nullopt);
      for (const GpuImage& g : images) {
        EXPECT_EQ(g.image.substr(0, 4), "\x7f" "ELF") << g.name << " sm_" << arch;
        EXPECT_EQ(g.ptxas.spill_store_bytes + g.ptxas.spill_load_bytes, 0) << g.name << " sm_" << arch;
      }
    }
  }
}

}  // namespace
}  // namespace bertc::codegen
