// The sort family: argsort, the stable order of gather indices by (batch, index) that scatter_add
// adds its rows in. One block sorts by radix, 4 bits a pass (a least-significant-digit counting
// sort): the indices are few next to the rows they move (4096 tokens of a 30522-row vocabulary in
// a BERT-base batch), and one block needs no second launch to order its passes.
#include <algorithm>
#include <bit>

#include <fmt/format.h>

#include "codegen/family.h"

namespace bertc::codegen {

using ir::OpKind;

namespace {

constexpr int kThreads = 256;
constexpr int kDigits = 16;  // 4 bits a pass: 16 x 256 counters fit shared memory

// The per-pass body: each thread counts the digits of its own contiguous run of positions, a scan
// over the counters in digit-major order gives each (digit, thread) its first place, and each
// thread moves its run there in order, which keeps the sort stable.
constexpr const char* kPass = R"(  for (int pass = 0; pass < {passes}; ++pass) {{
    // Ping-pong so that the last pass writes out0; the first reads positions and their keys.
    const bool into_out = (({passes} - 1 - pass) & 1) == 0;
    int* to_val = into_out ? out0 : val_b;
    int* to_key = into_out ? key_a : key_b;
    const int* from_val = into_out ? val_b : out0;
    const int* from_key = into_out ? key_b : key_a;
    const int shift = 4 * pass;
    for (int d = 0; d < {digits}; ++d) counts[d * {threads} + t] = 0;
    for (bx_i64 i = first; i < last; ++i) {{
      const int key = pass == 0 ? key_of(i) : from_key[i];
      counts[((key >> shift) & {mask}) * {threads} + t] += 1;
    }}
    bx_sync();
    int run = 0;
    for (int k = 0; k < {digits}; ++k) run += counts[t * {digits} + k];
    sums[t] = run;
    bx_sync();
    for (int offset = 1; offset < {threads}; offset *= 2) {{
      const int before = t >= offset ? sums[t - offset] : 0;
      bx_sync();
      sums[t] += before;
      bx_sync();
    }}
    int place = sums[t] - run;
    for (int k = 0; k < {digits}; ++k) {{
      const int c = counts[t * {digits} + k];
      counts[t * {digits} + k] = place;
      place += c;
    }}
    bx_sync();
    for (bx_i64 i = first; i < last; ++i) {{
      const int val = pass == 0 ? (int)i : from_val[i];
      const int key = pass == 0 ? key_of(i) : from_key[i];
      const int at = counts[((key >> shift) & {mask}) * {threads} + t]++;
      to_val[at] = val;
      to_key[at] = key;
    }}
    bx_sync();  // this pass's writes are seen by every thread of the block in the next
  }}
)";

}  // namespace

// Pre: the group is one argsort. Post: out0[k] is the position of the k-th smallest key
// (batch * rows + index, the index clamped into [0, rows)), ties in position order.
KernelSpec render_sort(const KernelInput& in) {
  const ir::Op& op = in.body.ops().back();
  if (op.kind != OpKind::ArgSort || in.body.outputs().size() != 1 || in.body.outputs()[0] != op.result())
    throw ir::Error("sort family: the group must be one argsort");
  const ir::Shape& shape = in.body.value(op.operands[0]).type.shape;
  const int64_t rows = op.attr<int64_t>("rows"), n = ir::checked_numel(shape);
  int64_t per_batch = 1, batches = 1;
  for (size_t i = 0; i < shape.size(); ++i) (static_cast<int64_t>(i) < op.attr<int64_t>("batch_dims") ? batches : per_batch) *= shape[i];
  const int bits = std::max(1, static_cast<int>(std::bit_width(static_cast<uint64_t>(batches * rows - 1))));
  const int passes = (bits + 3) / 4;
  const int64_t run = (n + kThreads - 1) / kThreads;  // positions per thread
  std::string body = fmt::format(
      "  const int t = bx_tid_x();\n"
      "  const bx_i64 first = (bx_i64)t * {run} < {n} ? (bx_i64)t * {run} : {n};\n"
      "  const bx_i64 last = first + {run} < {n} ? first + {run} : {n};\n"
      "  int* const val_b = (int*)work;\n"
      "  int* const key_a = val_b + {n};\n"
      "  int* const key_b = key_a + {n};\n"
      "  BX_SHARED(int, counts, {cells});\n"
      "  BX_SHARED(int, sums, {threads});\n"
      "  auto key_of = [&](bx_i64 i) {{ return (int)bx_gather_key(i, bx_ld(in0, i), {per_batch}, {rows}); }};\n",
      fmt::arg("run", run), fmt::arg("n", n), fmt::arg("cells", kDigits * kThreads), fmt::arg("threads", kThreads),
      fmt::arg("per_batch", per_batch), fmt::arg("rows", rows));
  body += fmt::format(fmt::runtime(kPass), fmt::arg("passes", passes), fmt::arg("digits", kDigits),
                      fmt::arg("threads", kThreads), fmt::arg("mask", kDigits - 1));
  KernelSpec k;
  k.params = buffer_params(in);
  k.params.push_back(workspace_param("work", static_cast<size_t>(12 * n)));  // the other values buffer, two key buffers
  k.source = kernel_text(k.params, body);
  k.block = {kThreads};
  k.grid = {1};
  k.cooperative = true;
  return k;
}

}  // namespace bertc::codegen
