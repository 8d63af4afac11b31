// Kernels rounding gradients to 16 bits around a collective sum, and back (see gradient_casts.h).
#include "codegen/gradient_casts.h"

#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "codegen/family.h"

namespace bertc::codegen {
namespace {

KernelParam param(const std::string& name, const std::string& c_type, bool written = false) {
  KernelParam p;
  p.name = name;
  p.c_type = c_type;
  p.written = written;
  return p;
}

KernelSpec cast_kernel(const std::string& label, const std::string& from_type, const std::string& to_type,
                       const std::string& value, int64_t elements) {
  KernelSpec k;
  k.label = label;
  k.params = {param("from", from_type), param("to", to_type, true), param("n", "bx_i64"), param("ranks", "bx_i64")};
  const std::string body = fmt::format(
      "  const bx_i64 stride = (bx_i64)bx_gdim_x() * bx_bdim_x();\n"
      "  for (bx_i64 i = (bx_i64)bx_bid_x() * bx_bdim_x() + bx_tid_x(); i < n; i += stride)\n"
      "    bx_st(to, i, {});\n",
      value);
  k.source = kernel_text(k.params, body);
  const int threads = threads_for(elements);
  k.block = {threads, 1, 1};
  k.grid = {blocks_for(elements, threads), 1, 1};
  seal_kernel(k);
  return k;
}

}  // namespace

GradientCasts gradient_casts(ir::DType half, int64_t elements) {
  if (half != ir::DType::F16 && half != ir::DType::BF16)
    throw std::logic_error("gradient casts round to f16 or bf16 only");
  const std::string type = half == ir::DType::F16 ? "bx_f16" : "bx_bf16";
  const std::string name(ir::dtype_name(half));
  // Divided (not multiplied by 1/ranks), as the host path does: the same bits for any rank count.
  return {cast_kernel("gradient sums: round to " + name, "const float*", type + "*",
                      "from[i] / (float)ranks", elements),
          cast_kernel("gradient sums: widen from " + name, "const " + type + "*", "float*",
                      "(float)ranks * bx_ld(from, i)", elements)};
}

std::map<int64_t, GradientCasts> gradient_casts_for(const ir::Graph& step, ir::DType half) {
  std::map<int64_t, GradientCasts> casts;
  for (ir::ValueId p : step.values_of(ir::OpKind::Param)) {
    const int64_t n = step.value(p).type.numel();
    if (!casts.count(n)) casts.emplace(n, gradient_casts(half, n));
  }
  return casts;
}

}  // namespace bertc::codegen
