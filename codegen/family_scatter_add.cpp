// The scatter_add family: gather's gradient, one thread per update element, atomic adds into a
// zeroed output.
#include <fmt/format.h>

#include "codegen/family.h"

namespace bertc::codegen {

using ir::OpKind;

// Scatter-add: the output starts zeroed (the launch expects it so) and every update row is added
// where its index points, atomically, except rows whose index is padding_idx.
KernelSpec render_scatter_add(const KernelInput& in) {
  const ir::Op* op = nullptr;
  for (const ir::Op& o : in.body.ops())
    if (o.kind == OpKind::ScatterAdd) op = &o;
  if (!op || in.body.outputs().size() != 1 || in.body.outputs()[0] != op->result())
    throw ir::Error("scatter_add family: the group must be one scatter_add");
  const ir::Shape updates = in.body.value(op->operands[0]).type.shape;
  const ir::Shape table = in.body.value(op->result()).type.shape;
  const size_t index_rank = in.body.value(op->operands[1]).type.shape.size();
  const auto batch = static_cast<size_t>(op->attr<int64_t>("batch_dims"));
  const int64_t n = ir::checked_numel(updates);
  Emitter e(in.body, input_names(in));
  e.open(fmt::format("for (bx_i64 i = (bx_i64)bx_bid_x() * bx_bdim_x() + bx_tid_x(); i < {}; "
                     "i += (bx_i64)bx_gdim_x() * bx_bdim_x())",
                     n));
  const Coords u = e.decompose(updates, "i");
  const std::string index = e.at(op->operands[1], Coords(u.begin(), u.begin() + static_cast<std::ptrdiff_t>(index_rank)));
  Coords t(u.begin(), u.begin() + static_cast<std::ptrdiff_t>(batch));
  t.push_back(index);
  t.insert(t.end(), u.begin() + static_cast<std::ptrdiff_t>(index_rank), u.end());
  e.open(fmt::format("if ({} != {})", index, op->attr<int64_t>("padding_idx")));
  e.line(fmt::format("bx_atomic_add_st(out0, {}, {});", Emitter::linear(table, t), e.at(op->operands[0], u)));
  e.close();
  e.close();
  KernelSpec k;
  k.params = buffer_params(in);
  k.source = kernel_text(k.params, e.take());
  k.block = {threads_for(n)};
  k.grid = {blocks_for(n, k.block.x)};
  k.zero_before = {in.op.results[0]};
  return k;
}

}  // namespace bertc::codegen
