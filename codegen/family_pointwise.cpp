// The pointwise family: one thread per element of the largest output, grid-stride; every output
// of that shape written at the element, smaller (broadcast) outputs by the threads at their
// origin along the broadcast axes.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "codegen/family.h"

namespace bertc::codegen {

KernelSpec render_pointwise(const KernelInput& in) {
  const auto& outputs = in.body.outputs();
  ir::Shape domain;
  int64_t n = 1;
  for (ir::ValueId v : outputs) {
    const ir::TensorType& t = in.body.value(v).type;
    if (t.numel() > n || (t.numel() == n && t.shape.size() > domain.size())) n = t.numel(), domain = t.shape;
  }
  Emitter e(in.body, input_names(in));
  e.open(fmt::format("for (bx_i64 i = (bx_i64)bx_bid_x() * bx_bdim_x() + bx_tid_x(); i < {}; "
                     "i += (bx_i64)bx_gdim_x() * bx_bdim_x())",
                     n));
  const Coords at = e.decompose(domain, "i");
  for (size_t k = 0; k < outputs.size(); ++k) {
    const ir::Shape& s = in.body.value(outputs[k]).type.shape;
    if (s == domain) {
      store_output(e, k, at);
      continue;
    }
    // A smaller output broadcasts to the domain (NumPy rules): written where its broadcast
    // coordinates are 0, so each of its elements once.
    if (s.size() > domain.size()) throw ir::Error("pointwise: an output of higher rank than the kernel's domain");
    Coords c(s.size());
    std::vector<std::string> guard;
    for (size_t j = 0; j < s.size(); ++j) {
      const size_t d = j + domain.size() - s.size();
      if (s[j] == domain[d]) {
        c[j] = at[d];
      } else if (s[j] == 1) {
        c[j].assign(1, '0');  // not = "0": GCC 12 warns falsely (-Wrestrict)
        guard.push_back(at[d] + " == 0");
      } else {
        throw ir::Error("pointwise: an output that does not broadcast to the kernel's domain");
      }
    }
    for (size_t d = 0; d + s.size() < domain.size(); ++d) guard.push_back(at[d] + " == 0");
    if (guard.empty()) guard.push_back("true");
    e.open(fmt::format("if ({})", fmt::join(guard, " && ")));
    store_output(e, k, c);
    e.close();
  }
  e.close();
  KernelSpec k;
  k.params = buffer_params(in);
  k.source = kernel_text(k.params, e.take());
  k.block = {threads_for(n)};
  k.grid = {blocks_for(n, k.block.x)};
  k.cooperative = false;
  return k;
}

}  // namespace bertc::codegen
