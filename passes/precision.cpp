// The precision rewrite: casts at the uses of f32 values by reduced-precision ops.
#include "passes/precision.h"

#include <map>

#include <fmt/format.h>

#include "passes/graph_copy.h"
#include "ir/shape_rules.h"
#include "ir/value_names.h"

namespace bertc::passes {

using ir::Tensor;
using ir::DType;
using ir::OpKind;

ir::DType activation_dtype(Precision precision) {
  switch (precision) {
    case Precision::Fp32:
    case Precision::Tf32: return DType::F32;  // only the matrix kernels' inputs are rounded
    case Precision::Bf16: return DType::BF16;
    case Precision::Fp16:
    case Precision::Fp32Fp16Storage: return DType::F16;
    case Precision::Auto: break;
  }
  throw ir::Error("precision auto is decided by the target GPU: resolve it (fp32, fp16, bf16, fp32-fp16storage or tf32) first");
}

namespace {

class PrecisionRewrite {
 public:
  PrecisionRewrite(const ir::Graph& g, DType reduced) : g_(g), b_(g.name()), copy_(g, b_), r_(reduced) {}

  ir::Graph run(bool loss_scaling) {
    for (const ir::Op& op : g_.ops()) rewrite(op);
    copy_.copy_outputs();
    if (loss_scaling) {
      auto loss = g_.find(ir::names::kLoss);
      if (!loss) throw ir::Error("precision: loss scaling needs a value named 'loss'");
      // 2^16 to start, as PyTorch's GradScaler; the optimizer graph adjusts it every step.
      Tensor scale = b_.state(std::string(ir::names::kLossScale), {DType::F32, {}}, 65536.0);
      b_.output(copy_[*loss] * scale, std::string(ir::names::kScaledLoss));
    }
    return std::move(b_).finish();
  }

 private:
  // v in the reduced dtype, cast once per value.
  Tensor reduced(ir::ValueId v) {
    Tensor t = copy_[v];
    if (t.dtype() == r_ || !ir::is_float(t.dtype())) return t;
    auto it = casts_.find(v);
    if (it == casts_.end()) it = casts_.emplace(v, b_.cast(t, r_)).first;
    return it->second;
  }

  // Cross-entropy's per-row weights are no activation: they stay as they are.
  static bool keeps_operand(const ir::Op& op, size_t i) { return op.kind == OpKind::CrossEntropy && i == 2; }

  // Whether `op`, reading its operands in the reduced dtype, still makes an f32 result.
  bool result_is_f32(const ir::Op& op) {
    if (op.info().result_types == ir::ResultTypes::Declared) return false;  // declared in r_ (below)
    std::vector<ir::TensorType> types;
    for (size_t i = 0; i < op.operands.size(); ++i) {
      ir::TensorType t = copy_[op.operands[i]].type();
      if (!keeps_operand(op, i) && ir::is_float(t.dtype)) t.dtype = r_;
      types.push_back(t);
    }
    return ir::infer_result_types(op.kind, types, op.attrs, {}).at(0).dtype == DType::F32;
  }

  // v in f32 (a reduced float cast back up).
  Tensor widened(ir::ValueId v) {
    Tensor t = copy_[v];
    return t.dtype() == r_ ? b_.cast(t, DType::F32) : t;
  }

  void rewrite(const ir::Op& op) {
    if (ir::is_source(op.kind)) return copy_.copy(op);
    ir::Builder::OpScope scope(b_, op.scope);  // the casts belong to the op they serve
    bool reads_reduced = false;
    for (ir::ValueId v : op.operands) reads_reduced = reads_reduced || copy_[v].dtype() == r_;
    const bool from_param = (op.kind == OpKind::Gather || op.kind == OpKind::Slice) &&
                            g_.producer(op.operands[0]).kind == OpKind::Param;
    if (from_param) {  // read the f32 table, store the rows in R (the cast takes the name)
      copy_.copy(op, false);
      return remap(op, b_.cast(copy_[op.result()], r_));
    }
    if (!reads_reduced || op.kind == OpKind::Cast) return copy_.copy(op);
    // The loss stays f32 whatever it is computed from (a custom model's mean of activations):
    // autodiff and loss scaling start from an f32 scalar, and a mean in f16 loses the small terms.
    // An op that makes an f32 loss from reduced operands (cross-entropy) reads them as they are.
    const bool makes_loss = g_.value(op.result()).name == ir::names::kLoss && !result_is_f32(op);
    std::vector<Tensor> operands;
    for (size_t i = 0; i < op.operands.size(); ++i) {
      const ir::ValueId v = op.operands[i];
      operands.push_back(keeps_operand(op, i) ? copy_[v] : makes_loss ? widened(v) : reduced(v));
    }
    std::vector<ir::NamedAttr> attrs;
    for (size_t i = 0; i < op.attrs.size(); ++i) attrs.push_back({std::string(op.info().attrs[i].name), op.attrs[i]});
    std::optional<ir::TensorType> declared;
    if (op.info().result_types == ir::ResultTypes::Declared)
      declared = ir::TensorType{makes_loss ? DType::F32 : r_, g_.value(op.result()).type.shape};
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
  ir::Builder b_;
  GraphCopy copy_;
  DType r_;
  std::map<ir::ValueId, Tensor> casts_;
};

}  // namespace

void apply_precision(ir::Graph& graph, Precision precision) {
  const DType r = activation_dtype(precision);
  if (r == DType::F32) return;
  graph = PrecisionRewrite(graph, r).run(r == DType::F16);
}

}  // namespace bertc::passes
