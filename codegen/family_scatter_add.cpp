// The scatter_add family: gather's gradient, deterministic. The indices' argsort (family_sort.cpp)
// groups the update rows that land on one table row; a thread per (run of equal indices, column)
// adds the run's rows in sorted order and stores the sum, so no float is ever added atomically and
// every run gives the same bits.
#include <fmt/format.h>

#include "codegen/family.h"

namespace bertc::codegen {

using ir::OpKind;

namespace {

// A thread per (sorted position, column); the thread at the first position of a run (the key, batch
// * rows + index, differing from its predecessor's) finds the run's end by bisection and sums it.
constexpr const char* kBody = R"(  for (bx_i64 i = (bx_i64)bx_bid_x() * bx_bdim_x() + bx_tid_x(); i < {elements}LL; i += (bx_i64)bx_gdim_x() * bx_bdim_x()) {{
    const bx_i64 p = i / {width}, column = i % {width};
    const bx_i64 key = key_at(p);
    if (p > 0 && key_at(p - 1) == key) continue;  // not the first of its run
    const bx_i64 index = bx_ld(in1, (bx_i64)in2[p]);
    if (index == {padding}) continue;
    bx_i64 lo = p + 1, hi = {n};  // the run ends at the first position in [lo, hi] with another key
    while (lo < hi) {{
      const bx_i64 mid = lo + (hi - lo) / 2;
      if (key_at(mid) == key) lo = mid + 1; else hi = mid;
    }}
    float sum = 0.0f;
    for (bx_i64 q = p; q < lo; ++q) sum += bx_ld(in0, (bx_i64)in2[q] * {width} + column);
    bx_st(out0, key * {width} + column, sum);
  }}
)";

}  // namespace

// Pre: the group is one scatter_add whose third operand is its indices' argsort. Post: every table
// row an index names holds the sum of its update rows in sorted order; the rest stay zero (the
// launch expects its output zeroed), and so does row padding_idx.
KernelSpec render_scatter_add(const KernelInput& in) {
  const ir::Op& op = in.body.ops().back();
  if (op.kind != OpKind::ScatterAdd || in.body.outputs().size() != 1 || in.body.outputs()[0] != op.result())
    throw ir::Error("scatter_add family: the group must be one scatter_add");
  const ir::Shape& indices = in.body.value(op.operands[1]).type.shape;
  const ir::Shape& table = in.body.value(op.result()).type.shape;
  const auto batch_dims = static_cast<size_t>(op.attr<int64_t>("batch_dims"));
  const int64_t n = ir::checked_numel(indices), rows = table.at(batch_dims);
  // The runs are found by key: the order must be the argsort of these indices by the same key.
  const ir::Op& order = in.graph.producer(in.op.operands.at(2));
  if (order.kind != OpKind::ArgSort || order.operands.at(0) != in.op.operands.at(1) || order.attr<int64_t>("rows") != rows ||
      order.attr<int64_t>("batch_dims") != op.attr<int64_t>("batch_dims"))
    throw ir::Error(fmt::format("scatter_add family: the order operand must be argsort of the indices with rows = {} and "
                                "batch_dims = {}",
                                rows, op.attr<int64_t>("batch_dims")));
  int64_t per_batch = 1, width = 1;
  for (size_t i = batch_dims; i < indices.size(); ++i) per_batch *= indices[i];
  for (size_t i = batch_dims + 1; i < table.size(); ++i) width *= table[i];
  std::string body = fmt::format(
      "  auto key_at = [&](bx_i64 p) {{ return bx_gather_key(in2[p], bx_ld(in1, (bx_i64)in2[p]), {per_batch}, {rows}); }};\n",
      fmt::arg("per_batch", per_batch), fmt::arg("rows", rows));
  body += fmt::format(fmt::runtime(kBody), fmt::arg("n", n), fmt::arg("width", width), fmt::arg("elements", n * width),
                      fmt::arg("padding", op.attr<int64_t>("padding_idx")));
  KernelSpec k;
  k.params = buffer_params(in);
  k.source = kernel_text(k.params, body);
  k.block = {threads_for(n * width)};
  k.grid = {blocks_for(n * width, k.block.x)};
  k.zero_before = {in.op.results[0]};
  return k;
}

}  // namespace bertc::codegen
