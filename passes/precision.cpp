// The precision rewrite: casts at the uses of f32 values by reduced-precision ops.
#include "passes/precision.h"

#include <map>

#include <fmt/format.h>

#include "passes/graph_copy.h"

namespace bertc::passes {

using frontend::Tensor;
using ir::DType;
using ir::OpKind;

ir::DType activation_dtype(const std::string& precision) {
  if (precision == "fp32") return DType::F32;
  if (precision == "bf16") return DType::BF16;
  if (precision == "fp16" || precision == "fp32-fp16storage") return DType::F16;
  throw ir::Error(fmt::format("precision '{}' is not fp32, fp16, bf16 or fp32-fp16storage", precision));
}

namespace {

class PrecisionRewrite {
 public:
  PrecisionRewrite(const ir::Graph& g, DType reduced) : g_(g), b_(g.name()), copy_(g, b_), r_(reduced) {}

  ir::Graph run(bool loss_scaling) {
    for (const ir::Op& op : g_.ops()) rewrite(op);
    copy_.copy_outputs();
    if (loss_scaling) {
      auto loss = g_.find("loss");
      if (!loss) throw ir::Error("precision: loss scaling needs a value named 'loss'");
      // 2^16 to start, as PyTorch's GradScaler; the optimizer graph adjusts it every step.
      Tensor scale = b_.state("loss_scale", {DType::F32, {}}, 65536.0);
      b_.output(copy_[*loss] * scale, "scaled_loss");
    }
    return std::move(b_).finish();
  }

 private:
  bool is_source(const ir::Op& op) const {
    return op.kind == OpKind::Input || op.kind == OpKind::Param || op.kind == OpKind::State ||
           op.kind == OpKind::Constant;
  }

  // v in the reduced dtype, cast once per value.
  Tensor reduced(ir::ValueId v) {
    Tensor t = copy_[v];
    if (t.dtype() == r_ || !ir::is_float(t.dtype())) return t;
    auto it = casts_.find(v);
    if (it == casts_.end()) it = casts_.emplace(v, b_.cast(t, r_)).first;
    return it->second;
  }

  void rewrite(const ir::Op& op) {
    if (is_source(op)) return copy_.copy(op);
    frontend::Builder::OpScope scope(b_, op.scope);  // the casts belong to the op they serve
    bool reads_reduced = false;
    for (ir::ValueId v : op.operands) reads_reduced = reads_reduced || copy_[v].dtype() == r_;
    const bool from_param = (op.kind == OpKind::Gather || op.kind == OpKind::Slice) &&
                            g_.producer(op.operands[0]).kind == OpKind::Param;
    if (from_param) {  // read the f32 table, store the rows in R (the cast takes the name)
      copy_.copy(op, false);
      return remap(op, b_.cast(copy_[op.result()], r_));
    }
    if (!reads_reduced || op.kind == OpKind::Cast) return copy_.copy(op);
    std::vector<Tensor> operands;
    for (size_t i = 0; i < op.operands.size(); ++i) {
      // Cross-entropy's per-row weights are no activation: they stay as they are.
      const bool keep = op.kind == OpKind::CrossEntropy && i == 2;
      operands.push_back(keep ? copy_[op.operands[i]] : reduced(op.operands[i]));
    }
    std::vector<ir::NamedAttr> attrs;
    for (size_t i = 0; i < op.attrs.size(); ++i) attrs.push_back({std::string(op.info().attrs[i].name), op.attrs[i]});
    std::optional<ir::TensorType> declared;
    if (op.info().result_types == ir::ResultTypes::Declared) declared = ir::TensorType{r_, g_.value(op.result()).type.shape};
    const auto results = b_.ops(op.kind, operands, attrs, declared);
    for (size_t i = 0; i < results.size(); ++i) {
      copy_.map(op.results[i], results[i]);
      if (!g_.value(op.results[i]).name.empty()) b_.name(results[i], g_.value(op.results[i]).name);
    }
  }

  // The op's (single) result is now `t`, under the original name.
  void remap(const ir::Op& op, Tensor t) {
    copy_.map(op.result(), t);
    if (!g_.value(op.result()).name.empty()) b_.name(t, g_.value(op.result()).name);
  }

  const ir::Graph& g_;
  frontend::Builder b_;
  GraphCopy copy_;
  DType r_;
  std::map<ir::ValueId, Tensor> casts_;
};

}  // namespace

void apply_precision(ir::Graph& graph, const std::string& precision) {
  const DType r = activation_dtype(precision);
  if (r == DType::F32) return;
  graph = PrecisionRewrite(graph, r).run(r == DType::F16);
}

}  // namespace bertc::passes
