// Roofline costs per launch.
#include "passes/cost_model.h"

#include <algorithm>
#include <set>

#include "ir/stats.h"

namespace bertc::passes {
namespace {

using ir::OpKind;

// Ops rendered by the matrix families run on tensor cores where the GPU has them.
bool uses_matrix_units(OpKind k) {
  const ir::KernelFamily f = ir::op_info(k).traits.family;
  return f == ir::KernelFamily::Matmul || f == ir::KernelFamily::Attention;
}

// FLOPs of op, counting a fused op's region op by op; `matrix` tells whether matrix products are
// among them (and their input dtype).
int64_t flops_of(const ir::Graph& g, const ir::Op& op, std::optional<ir::DType>& matrix) {
  if (op.kind == OpKind::Fused) {
    int64_t f = 0;
    for (const ir::Op& inner : op.region.graph().ops()) f += flops_of(op.region.graph(), inner, matrix);
    return f;
  }
  if (uses_matrix_units(op.kind) && !matrix) matrix = g.value(op.operands[0]).type.dtype;
  return ir::op_flops(g, op);
}

// Bytes an op reads from operand i: the whole tensor, except a table a gather indexes, of which
// it reads only the gathered rows (an embedding lookup touches batch x seq rows, not the vocabulary).
int64_t bytes_read(const ir::Graph& g, const ir::Op& op, size_t i) {
  const ir::Value& v = g.value(op.operands[i]);
  if (op.kind == OpKind::Gather && i == 0) return g.value(op.result()).type.bytes();
  if (op.kind != OpKind::Fused) return v.type.bytes();
  const ir::Graph& body = op.region.graph();
  const auto inputs = body.values_of(OpKind::Input);
  int64_t gathered = 0;
  for (const ir::Op& inner : body.ops())
    for (size_t k = 0; k < inner.operands.size(); ++k) {
      if (inner.operands[k] != inputs[i]) continue;
      if (inner.kind != OpKind::Gather || k != 0) return v.type.bytes();  // read as a whole somewhere
      gathered += body.value(inner.result()).type.bytes();
    }
  return gathered;
}

}  // namespace

double matrix_peak(const GpuSpec& gpu, ir::DType dtype, Precision precision) {
  if (dtype == ir::DType::BF16 && gpu.bf16_tensor_tflops > 0) return gpu.bf16_tensor_tflops * 1e12;
  if (dtype == ir::DType::F32 && precision == Precision::Tf32 && gpu.tf32_tensor_tflops > 0)
    return gpu.tf32_tensor_tflops * 1e12;
  if (dtype == ir::DType::F16 && precision != Precision::Fp32Fp16Storage)
    return (gpu.fp16_tensor_tflops > 0 ? gpu.fp16_tensor_tflops : gpu.fp16_simt_tflops) * 1e12;
  return gpu.fp32_tflops * 1e12;
}

LaunchCost launch_cost(const ir::Graph& graph, const ir::Op& op, const std::optional<GpuSpec>& gpu,
                       Precision precision) {
  LaunchCost c;
  if (!ir::launches_kernel(op.kind)) return c;
  c.launch = true;
  std::optional<ir::DType> matrix;
  c.flops = flops_of(graph, op, matrix);
  std::set<ir::ValueId> seen;
  for (size_t i = 0; i < op.operands.size(); ++i)
    if (seen.insert(op.operands[i]).second && graph.producer(op.operands[i]).kind != OpKind::Constant)
      c.bytes += bytes_read(graph, op, i);
  for (ir::ValueId r : op.results) c.bytes += graph.value(r).type.bytes();
  if (gpu) {
    const double peak = matrix ? matrix_peak(*gpu, *matrix, precision) : gpu->fp32_tflops * 1e12;
    c.seconds = std::max(static_cast<double>(c.flops) / peak, static_cast<double>(c.bytes) / (gpu->bandwidth_gbs * 1e9)) +
                kLaunchSeconds;
  }
  return c;
}

}  // namespace bertc::passes
