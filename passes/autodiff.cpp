// Reverse-mode differentiation: walk the forward ops backwards, apply each op's chain rule,
// sum the contributions each value receives.
#include "passes/autodiff.h"

#include <algorithm>
#include <map>
#include <numeric>

#include <fmt/format.h>

#include "ir/attention_layout.h"
#include "ir/builder.h"
#include "ir/value_names.h"

// An OpKind without a case in apply_rule's switch is an error, not a warning: see the switch.
#pragma GCC diagnostic error "-Wswitch"

namespace bertc::passes {
namespace {

using ir::Builder;
using ir::Tensor;
using ir::OpKind;

class Differentiator {
 public:
  explicit Differentiator(ir::Graph graph) : forward_ops_(graph.ops()), b_(std::move(graph)) {}

  ir::Graph run() {
    const ir::Graph& g = b_.graph();
    // The precision pass's loss-scaled objective when there is one, else the loss itself.
    auto loss = g.find(ir::names::kScaledLoss);
    if (!loss) loss = g.find(ir::names::kLoss);
    if (!loss || g.value(*loss).type != ir::TensorType{ir::DType::F32, {}})
      throw ir::Error("autodiff: the graph needs a scalar f32 value named 'loss' (or 'scaled_loss')");
    mark_needs_grad();
    grads_[*loss] = b_.constant(1.0);
    for (auto op = forward_ops_.rbegin(); op != forward_ops_.rend(); ++op) backprop(*op);
    for (ir::ValueId p : b_.graph().values_of(OpKind::Param)) {
      const ir::TensorType type = b_.graph().value(p).type;
      auto it = grads_.find(p);
      Tensor grad = it != grads_.end() ? it->second : b_.broadcast(b_.constant(0.0, type.dtype), type.shape);
      b_.output(grad, ir::names::grad_of(b_.graph().value(p).name));
    }
    return std::move(b_).finish();
  }

 private:
  // A value needs a gradient when a param reaches it through float operands.
  void mark_needs_grad() {
    const ir::Graph& g = b_.graph();
    needs_.assign(g.num_values(), false);
    for (const ir::Op& op : forward_ops_) {
      bool needs = op.kind == OpKind::Param;
      for (ir::ValueId v : op.operands) needs = needs || (needs_[v] && ir::is_float(g.value(v).type.dtype));
      for (ir::ValueId r : op.results) needs_[r] = needs && ir::is_float(g.value(r).type.dtype);
    }
  }

  void accumulate(ir::ValueId v, Tensor g) {
    if (!needs_[v]) return;
    auto it = grads_.find(v);
    if (it == grads_.end()) grads_.emplace(v, g);
    else it->second = it->second + g;
  }

  Tensor operand(const ir::Op& op, size_t i) { return b_.value(op.operands[i]); }
  Tensor result(const ir::Op& op) { return b_.value(op.result()); }
  // Copies, never references: adding ops moves the graph's value storage.
  ir::Shape shape_of(ir::ValueId v) const { return b_.graph().value(v).type.shape; }

  // Sums g over the dims that broadcasting added or stretched, giving shape `to`.
  Tensor unbroadcast(Tensor g, const ir::Shape& to) {
    const ir::Shape from = g.shape();
    if (from == to) return g;
    const size_t lead = from.size() - to.size();
    std::vector<int64_t> axes;
    for (size_t d = 0; d < from.size(); ++d)
      if (d < lead || (to[d - lead] == 1 && from[d] != 1)) axes.push_back(static_cast<int64_t>(d));
    return b_.reshape(axes.empty() ? g : b_.reduce_sum(g, axes), to);
  }

  void backprop(const ir::Op& op) {
    if (op.results.empty()) return;  // effects have no gradient to pass on
    // Every rule differentiates through result 0; attention's second result (logsumexp) is only
    // for its own backward and takes no gradient.
    for (size_t r = 1; r < op.results.size(); ++r)
      if (grads_.count(op.results[r]))
        throw ir::Error(fmt::format("autodiff: the loss depends on result {} of {}, which has no gradient rule", r,
                                    op.info().name));
    auto it = grads_.find(op.results[0]);
    if (it == grads_.end()) return;
    const Tensor dy = it->second;
    const bool any_input_needs =
        std::any_of(op.operands.begin(), op.operands.end(), [&](ir::ValueId v) { return needs_[v]; });
    if (!any_input_needs) return;
    Builder::OpScope scope(b_, op.scope.empty() ? "backward" : "backward/" + op.scope);
    apply_rule(op, dy);
  }

  void apply_rule(const ir::Op& op, Tensor dy) {
    const ir::ValueId x = op.operands.empty() ? 0 : op.operands[0];
    switch (op.kind) {
      case OpKind::Neg: return accumulate(x, -dy);
      case OpKind::Exp: return accumulate(x, dy * result(op));
      case OpKind::Expm1: return accumulate(x, dy * (result(op) + 1.0));  // (e^x = y + 1)
      case OpKind::Log: return accumulate(x, dy / operand(op, 0));
      case OpKind::Sqrt: return accumulate(x, (dy * 0.5) / result(op));
      case OpKind::Rsqrt: {
        const Tensor y = result(op);
        return accumulate(x, dy * (y * y * y * -0.5));
      }
      case OpKind::Tanh: {
        const Tensor y = result(op);
        return accumulate(x, dy * (1.0 - y * y));
      }
      case OpKind::Sigmoid: {
        const Tensor y = result(op);
        return accumulate(x, dy * (y * (1.0 - y)));
      }
      case OpKind::Gelu: return accumulate(x, b_.op(OpKind::GeluGrad, {dy, operand(op, 0)}));
      case OpKind::Relu: return accumulate(x, b_.op(OpKind::ReluGrad, {dy, operand(op, 0)}));
      case OpKind::LeakyRelu: {  // dy where x > 0 (exactly: g + 0), else slope * dy (0 + dy * slope)
        const Tensor g = b_.op(OpKind::ReluGrad, {dy, operand(op, 0)});
        return accumulate(x, g + (dy - g) * op.attr<double>("slope"));
      }
      case OpKind::Add:
      case OpKind::Sub: return binary_sum(op, dy, op.kind == OpKind::Sub);
      case OpKind::Mul: return binary_product(op, dy);
      case OpKind::Div: return binary_quotient(op, dy);
      case OpKind::Matmul: return matmul(op, dy);
      case OpKind::ReduceSum:
      case OpKind::ReduceMean: return reduction(op, dy);
      case OpKind::Reshape: return accumulate(x, b_.reshape(dy, shape_of(x)));
      case OpKind::Permute: return permute(op, dy);
      case OpKind::Broadcast: return accumulate(x, unbroadcast(dy, shape_of(x)));
      case OpKind::Slice: return slice(op, dy);
      case OpKind::Pad: {
        const int64_t axis = op.attr<int64_t>("axis"), before = op.attr<int64_t>("before");
        return accumulate(x, b_.slice(dy, axis, before, before + shape_of(x)[axis]));
      }
      case OpKind::Concat: return concat(op, dy);
      case OpKind::Gather: return gather(op, dy);
      case OpKind::Cast: return accumulate(x, b_.cast(dy, b_.graph().value(x).type.dtype));
      case OpKind::Softmax: return accumulate(x, b_.op(OpKind::SoftmaxGrad, {dy, result(op)}));
      case OpKind::LayerNorm: return layer_norm(op, dy);
      case OpKind::Dropout:
        return accumulate(x, b_.op(OpKind::Dropout, {dy, operand(op, 1)},
                                   {{"p", op.attr<double>("p")}, {"offset", op.attr<int64_t>("offset")}}));
      case OpKind::CrossEntropy: return cross_entropy(op, dy);
      case OpKind::Attention: return attention(op, dy);
      case OpKind::AttentionQkv: return attention_qkv(op, dy);
      case OpKind::Where: {
        const Tensor zero = b_.constant(0.0, dy.dtype());
        if (needs_[op.operands[1]])
          accumulate(op.operands[1], unbroadcast(b_.op(OpKind::Where, {operand(op, 0), dy, zero}), shape_of(op.operands[1])));
        if (needs_[op.operands[2]])
          accumulate(op.operands[2], unbroadcast(b_.op(OpKind::Where, {operand(op, 0), zero, dy}), shape_of(op.operands[2])));
        return;
      }
      // The ops ops.def marks NoGradient, each a case of its own: a Rule op left without a case
      // above is -Wswitch's error (made one at the top of this file), and a NoGradient op given a rule above is a
      // duplicate case. No default: the table, not this switch, says which ops have a gradient.
#define BERTC_GRADIENT_CASE_Rule(id)
#define BERTC_GRADIENT_CASE_NoGradient(id) case OpKind::id:
#define BERTC_GRADIENT_CASE_OF(gradient, id) BERTC_GRADIENT_CASE_##gradient(id)
#define BERTC_GRADIENT_CASE(gradient, id) BERTC_GRADIENT_CASE_OF(gradient, id)
#define TRAITS(pattern, family, flags, gradient) gradient
#define BERTC_OP(id, text, rule, results, operands, flops, attrs, traits, kernel, doc) BERTC_GRADIENT_CASE(traits, id)
#include "ir/ops.def"
#undef BERTC_OP
#undef TRAITS
#undef BERTC_GRADIENT_CASE
#undef BERTC_GRADIENT_CASE_OF
#undef BERTC_GRADIENT_CASE_NoGradient
#undef BERTC_GRADIENT_CASE_Rule
        throw ir::Error(fmt::format("autodiff: {} has no gradient rule, but the loss depends on a param through it",
                                    op.info().name));
    }
    // (every OpKind returns or throws above; a value outside the enum is not an op)
    throw std::logic_error("autodiff: an op kind outside ops.def");
  }

  void binary_sum(const ir::Op& op, Tensor dy, bool subtract) {
    accumulate(op.operands[0], unbroadcast(dy, shape_of(op.operands[0])));
    if (needs_[op.operands[1]]) accumulate(op.operands[1], unbroadcast(subtract ? -dy : dy, shape_of(op.operands[1])));
  }

  void binary_product(const ir::Op& op, Tensor dy) {
    if (needs_[op.operands[0]]) accumulate(op.operands[0], unbroadcast(dy * operand(op, 1), shape_of(op.operands[0])));
    if (needs_[op.operands[1]]) accumulate(op.operands[1], unbroadcast(dy * operand(op, 0), shape_of(op.operands[1])));
  }

  // d(a/b) = da / b - a db / b^2 = (dy / b) da - (dy * y / b) db.
  void binary_quotient(const ir::Op& op, Tensor dy) {
    const Tensor q = dy / operand(op, 1);
    if (needs_[op.operands[0]]) accumulate(op.operands[0], unbroadcast(q, shape_of(op.operands[0])));
    if (needs_[op.operands[1]]) accumulate(op.operands[1], unbroadcast(-(q * result(op)), shape_of(op.operands[1])));
  }

  // C = op(A) @ op(B): dA = dC @ op(B)^T and dB = op(A)^T @ dC, written back through the
  // transposes; a shared rank-2 operand (a weight) sums over the other side's batch by folding the
  // batch into the matrix rows instead of materialising one product per batch element.
  void matmul(const ir::Op& op, Tensor dc) {
    const bool ta = op.attr<bool>("transpose_a"), tb = op.attr<bool>("transpose_b");
    const Tensor a = operand(op, 0), b = operand(op, 1);
    if (needs_[op.operands[0]]) {
      const Tensor da = ta ? b_.matmul(b, dc, tb, true) : b_.matmul(dc, b, false, !tb);
      accumulate(op.operands[0], unbroadcast(da, a.shape()));
    }
    if (!needs_[op.operands[1]]) return;
    if (b.rank() == 2 && a.rank() > 2 && !ta) {
      const int64_t k = a.dim(-1), n = dc.dim(-1), rows = a.type().numel() / k;
      const Tensor a2 = b_.reshape(a, {rows, k}), dc2 = b_.reshape(dc, {rows, n});
      return accumulate(op.operands[1], tb ? b_.matmul(dc2, a2, true, false) : b_.matmul(a2, dc2, true, false));
    }
    const Tensor db = tb ? b_.matmul(dc, a, true, ta) : b_.matmul(a, dc, !ta, false);
    accumulate(op.operands[1], unbroadcast(db, b.shape()));
  }

  void reduction(const ir::Op& op, Tensor dy) {
    const ir::Shape& in = shape_of(op.operands[0]);
    ir::Shape kept = in;
    for (int64_t a : op.attr<std::vector<int64_t>>("axes")) kept[a] = 1;
    Tensor g = b_.broadcast(b_.reshape(dy, kept), in);
    if (op.kind == OpKind::ReduceMean) {
      const double n = static_cast<double>(ir::checked_numel(in)) / static_cast<double>(ir::checked_numel(kept));
      g = g * (1.0 / n);
    }
    accumulate(op.operands[0], g);
  }

  void permute(const ir::Op& op, Tensor dy) {
    const auto& perm = op.attr<std::vector<int64_t>>("perm");
    std::vector<int64_t> inverse(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
    accumulate(op.operands[0], b_.permute(dy, inverse));
  }

  void slice(const ir::Op& op, Tensor dy) {
    const int64_t axis = op.attr<int64_t>("axis"), start = op.attr<int64_t>("start"), end = op.attr<int64_t>("end");
    const int64_t dim = shape_of(op.operands[0])[axis];
    accumulate(op.operands[0], b_.op(OpKind::Pad, {dy}, {{"axis", axis}, {"before", start}, {"after", dim - end}}));
  }

  void concat(const ir::Op& op, Tensor dy) {
    const int64_t axis = op.attr<int64_t>("axis");
    int64_t at = 0;
    for (ir::ValueId part : op.operands) {
      const int64_t size = shape_of(part)[axis];
      if (needs_[part]) accumulate(part, b_.slice(dy, axis, at, at + size));
      at += size;
    }
  }

  // Scatter-add in the indices' sorted order: the rows landing on one row are added in an order
  // fixed by the indices, so the gradient has the same bits on every run (no float atomics).
  void gather(const ir::Op& op, Tensor dy) {
    // Copies, not references: building ops below grows the graph's value and op lists, which
    // would leave a reference into them dangling (found on a token-classification graph).
    const ir::TensorType table = b_.graph().value(op.operands[0]).type;
    const ir::ValueId table_id = op.operands[0];
    const int64_t batch_dims = op.attr<int64_t>("batch_dims");
    const int64_t padding_idx = op.attr<int64_t>("padding_idx");
    const Tensor indices = operand(op, 1);
    const Tensor order = b_.op(OpKind::ArgSort, {indices},
                               {{"rows", table.shape.at(static_cast<size_t>(batch_dims))}, {"batch_dims", batch_dims}});
    accumulate(table_id, b_.op(OpKind::ScatterAdd, {dy, indices, order},
                               {{"batch_dims", batch_dims}, {"padding_idx", padding_idx}}, table));
  }

  void layer_norm(const ir::Op& op, Tensor dy) {
    auto g = b_.ops(OpKind::LayerNormGrad, {dy, operand(op, 0), operand(op, 1)}, {{"eps", op.attr<double>("eps")}});
    for (size_t i = 0; i < 3; ++i) accumulate(op.operands[i], g[i]);
  }

  void cross_entropy(const ir::Op& op, Tensor dloss) {
    std::vector<Tensor> in{dloss};
    for (size_t i = 0; i < op.operands.size(); ++i) in.push_back(operand(op, i));
    accumulate(op.operands[0],
               b_.op(OpKind::CrossEntropyGrad, in, {{"ignore_index", op.attr<int64_t>("ignore_index")}}));
  }

  // (dq, dk, dv) from attention_grad, which recomputes the probabilities from q, k, the bias and
  // the saved logsumexp; the bias (the padding mask) takes no gradient.
  void attention(const ir::Op& op, Tensor dout) {
    if (needs_[op.operands[3]]) throw ir::Error("autodiff: attention's bias (the mask) has no gradient rule");
    std::vector<Tensor> in{dout, operand(op, 0), operand(op, 1), operand(op, 2), operand(op, 3), result(op),
                           b_.value(op.results[1])};
    add_seed_and_example_ids(op, in);
    auto g = b_.ops(OpKind::AttentionGrad, in, attention_attrs(op));
    for (size_t i = 0; i < 3; ++i) accumulate(op.operands[i], g[i]);
  }

  // dqkv from attention_qkv_grad, packed as qkv: the same rule as attention's.
  void attention_qkv(const ir::Op& op, Tensor dout) {
    if (needs_[op.operands[1]]) throw ir::Error("autodiff: attention's bias (the mask) has no gradient rule");
    std::vector<Tensor> in{dout, operand(op, 0), operand(op, 1), result(op), b_.value(op.results[1])};
    add_seed_and_example_ids(op, in);
    accumulate(op.operands[0], b_.op(OpKind::AttentionQkvGrad, in, attention_attrs(op)));
  }

  // The forward's seed and example ids, where it has them, end the backward's operands as well.
  void add_seed_and_example_ids(const ir::Op& op, std::vector<Tensor>& in) {
    const ir::AttentionLayout l = ir::attention_layout(b_.graph(), op);
    if (l.seed) in.push_back(operand(op, *l.seed));
    if (l.example_ids) in.push_back(operand(op, *l.example_ids));
  }

  static std::vector<ir::NamedAttr> attention_attrs(const ir::Op& op) {
    std::vector<ir::NamedAttr> attrs{
        {"scale", op.attr<double>("scale")}, {"p", op.attr<double>("p")}, {"offset", op.attr<int64_t>("offset")}};
    if (op.attr<bool>("blocks")) attrs.push_back({"blocks", true});
    return attrs;
  }

  std::vector<ir::Op> forward_ops_;  // a copy: the graph's op list grows while we walk this one
  Builder b_;
  std::vector<bool> needs_;
  std::map<ir::ValueId, Tensor> grads_;
};

}  // namespace

void differentiate(ir::Graph& graph) { graph = Differentiator(std::move(graph)).run(); }

}  // namespace bertc::passes
