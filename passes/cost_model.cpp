// Roofline costs per launch.
#include "passes/cost_model.h"

#include <algorithm>
#include <set>

#include "ir/attention_layout.h"
#include "ir/stats.h"

namespace bertc::passes {
namespace {

using ir::OpKind;

// Ops rendered by the matrix families run on tensor cores where the GPU has them.
bool uses_matrix_units(OpKind k) {
  const ir::KernelFamily f = ir::op_info(k).traits.family;
  return f == ir::KernelFamily::Matmul || f == ir::KernelFamily::Attention;
}

// The input dtype of the first matrix product op computes (a fused op's region searched), if any.
std::optional<ir::DType> matrix_inputs(const ir::Graph& g, const ir::Op& op) {
  if (op.kind == OpKind::Fused) {
    for (const ir::Op& inner : op.region.graph().ops())
      if (const auto d = matrix_inputs(op.region.graph(), inner)) return d;
    return std::nullopt;
  }
  if (uses_matrix_units(op.kind)) return g.value(op.operands[0]).type.dtype;
  return std::nullopt;
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

int64_t counted_flops(const ir::Graph& graph, const ir::Op& op, const RowFractions& rows, int64_t* over_rows) {
  if (op.kind == OpKind::Fused) {
    int64_t f = 0;
    for (const ir::Op& inner : op.region.graph().ops()) f += counted_flops(op.region.graph(), inner, rows, over_rows);
    return f;
  }
  const int64_t whole = ir::op_flops(graph, op);
  if (ir::kernel_family(op) != ir::KernelFamily::Attention || !ir::attention_layout(graph, op).example_ids) return whole;
  if (over_rows) *over_rows += whole;
  // (the kernels skip the tiles between examples: what they compute is the data's, measured)
  return static_cast<int64_t>(static_cast<double>(whole) * rows.tiles);
}

double matrix_peak(const GpuSpec& gpu, ir::DType dtype, Precision precision) {
  if (dtype == ir::DType::BF16 && gpu.bf16_tensor_tflops > 0) return gpu.bf16_tensor_tflops * 1e12;
  if (dtype == ir::DType::F32 && precision == Precision::Tf32 && gpu.tf32_tensor_tflops > 0)
    return gpu.tf32_tensor_tflops * 1e12;
  if (dtype == ir::DType::F16 && precision != Precision::Fp32Fp16Storage)
    return (gpu.fp16_tensor_tflops > 0 ? gpu.fp16_tensor_tflops : gpu.fp16_simt_tflops) * 1e12;
  return gpu.fp32_tflops * 1e12;
}

LaunchCost launch_cost(const ir::Graph& graph, const ir::Op& op, const std::optional<GpuSpec>& gpu,
                       Precision precision, const RowFractions& rows) {
  LaunchCost c;
  if (!ir::launches_kernel(op.kind)) return c;
  c.launch = true;
  const std::optional<ir::DType> matrix = matrix_inputs(graph, op);
  c.flops = counted_flops(graph, op, rows);
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
