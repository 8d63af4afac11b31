// Builder: creates ops, runs each op's shape rule at once, and keeps parameter name scopes.
#include "ir/builder.h"

#include <algorithm>

#include "ir/printer.h"
#include "ir/shape_rules.h"
#include "ir/value_names.h"
#include "ir/verifier.h"

namespace bertc::ir {

ir::TensorType Tensor::type() const { return builder_->graph().value(id_).type; }

int64_t Tensor::dim(int64_t axis) const {
  const int64_t r = rank();
  if (axis < -r || axis >= r)
    throw ir::Error(fmt::format("axis {} is out of range for {}", axis, to_string(type())));
  return shape()[axis < 0 ? axis + r : axis];
}

Builder::Builder(ir::Graph graph) : graph_(std::move(graph)) {
  if (auto seed = graph_.find(names::kDropoutSeed)) dropout_seed_ = Tensor(this, *seed);
  for (const ir::Op& op : graph_.ops())
    if (op.kind == OpKind::Dropout) next_dropout_offset_ = std::max(next_dropout_offset_, op.attr<int64_t>("offset") + 1);
}

ir::Graph Builder::finish() && {
  ir::verify_or_throw(graph_);
  return std::move(graph_);
}

Builder::Scope Builder::scope(std::string_view part) {
  scopes_.emplace_back(part);
  return Scope(*this);
}

std::string Builder::scoped_name(std::string_view name) const {
  std::string full;
  for (const auto& s : scopes_) full += s + ".";
  return full + std::string(name);
}

Tensor Builder::source(OpKind kind, const std::string& name, ir::TensorType type) {
  Tensor t = op(kind, {}, {}, std::move(type));
  graph_.name_value(t.id(), name);
  return t;
}

Tensor Builder::input(const std::string& name, DType dtype, Shape shape) {
  return source(OpKind::Input, name, {dtype, std::move(shape)});
}

Tensor Builder::param(std::string_view name, Shape shape, DType dtype) {
  return source(OpKind::Param, scoped_name(name), {dtype, std::move(shape)});
}

Tensor Builder::constant(double value, DType dtype) {
  return op(OpKind::Constant, {}, {{"value", value}}, ir::TensorType{dtype, {}});
}

Tensor Builder::op(OpKind kind, const std::vector<Tensor>& operands, std::vector<ir::NamedAttr> attrs,
                   std::optional<ir::TensorType> declared) {
  std::vector<Tensor> results = ops(kind, operands, std::move(attrs), std::move(declared));
  if (results.size() != 1)
    throw ir::Error(fmt::format("building {}: it has {} results; use Builder::ops", ir::op_info(kind).name,
                                results.size()));
  return results[0];
}

std::vector<Tensor> Builder::copy_op(const ir::Op& op, const std::vector<Tensor>& operands,
                                     const std::vector<ir::TensorType>& result_types) {
  std::vector<ir::NamedAttr> attrs;
  for (size_t i = 0; i < op.attrs.size(); ++i) attrs.push_back({std::string(op.info().attrs[i].name), op.attrs[i]});
  std::vector<ir::ValueId> ids;
  std::vector<ir::TensorType> types;
  for (const Tensor& t : operands) {
    ids.push_back(t.id());
    types.push_back(t.type());
  }
  const bool declared = op.info().result_types == ir::ResultTypes::Declared;
  std::vector<ir::TensorType> inferred;
  try {
    inferred = ir::infer_result_types(op.kind, types, op.attrs,
                                      declared ? std::span<const ir::TensorType>(result_types)
                                               : std::span<const ir::TensorType>{});
  } catch (const ir::InferError& e) {
    throw ir::Error(fmt::format("copying {}: {}", op.info().name, e.what()));
  }
  if (inferred != result_types)
    throw ir::Error(fmt::format("copying {}: result types differ from the operands' ({} results)", op.info().name,
                                result_types.size()));
  const ir::OpId id = graph_.add_op(op.kind, std::move(ids), op.attrs, inferred, op.loc);
  graph_.set_scope(id, op_scope_ ? *op_scope_ : op.scope);
  graph_.set_region(id, op.region);
  std::vector<Tensor> out;
  for (ir::ValueId r : graph_.op(id).results) out.emplace_back(this, r);
  return out;
}

Tensor Builder::state(const std::string& name, ir::TensorType type, double init) {
  Tensor t = op(OpKind::State, {}, {{"init", init}}, std::move(type));
  graph_.name_value(t.id(), name);
  return t;
}

void Builder::update(Tensor target, Tensor value) { ops(OpKind::Update, {target, value}); }

std::vector<Tensor> Builder::ops(OpKind kind, const std::vector<Tensor>& operands, std::vector<ir::NamedAttr> attrs,
                                 std::optional<ir::TensorType> declared) {
  const ir::OpInfo& info = ir::op_info(kind);
  auto context = [&] {
    return scopes_.empty() ? fmt::format("building {}", info.name)
                           : fmt::format("building {} in {}", info.name, fmt::join(scopes_, "."));
  };
  std::vector<ir::ValueId> ids;
  std::vector<ir::TensorType> types;
  for (const Tensor& t : operands) {
    if (&t.builder() != this) throw ir::Error(context() + ": an operand belongs to another builder");
    ids.push_back(t.id());
    types.push_back(t.type());
  }
  if (ids.size() < info.min_operands() || ids.size() > info.max_operands())
    throw ir::Error(fmt::format("{}: expected operands ({}), found {}", context(), info.operand_signature(), ids.size()));
  std::vector<ir::AttrValue> complete;
  std::vector<ir::TensorType> results;
  try {
    complete = ir::complete_attrs(info, attrs);
    std::vector<ir::TensorType> decl;
    if (declared) decl.push_back(*declared);
    results = ir::infer_result_types(kind, types, complete, decl);
  } catch (const ir::InferError& e) {
    const auto all_labels = ir::value_labels(graph_);
    std::vector<std::string> labels;
    for (ir::ValueId id : ids) labels.push_back(all_labels[id]);
    throw ir::Error(fmt::format("{}: {}", context(), ir::explain_infer_error(e, info, labels, types)));
  } catch (const ir::Error& e) {
    throw ir::Error(fmt::format("{}: {}", context(), e.what()));
  }
  const ir::OpId id = graph_.add_op(kind, std::move(ids), std::move(complete), std::move(results));
  const bool source = kind == OpKind::Input || kind == OpKind::Param || kind == OpKind::State;
  if (!source) graph_.set_scope(id, op_scope_ ? *op_scope_ : fmt::format("{}", fmt::join(scopes_, ".")));
  std::vector<Tensor> out;
  for (ir::ValueId r : graph_.op(id).results) out.emplace_back(this, r);
  return out;
}

int64_t Builder::normalize_axis(const Tensor& x, int64_t axis) const {
  const int64_t r = x.rank();
  if (axis < -r || axis >= r)
    throw ir::Error(fmt::format("axis {} is out of range for {}", axis, to_string(x.type())));
  return axis < 0 ? axis + r : axis;
}

Tensor Builder::matmul(Tensor a, Tensor b, bool transpose_a, bool transpose_b) {
  return op(OpKind::Matmul, {a, b}, {{"transpose_a", transpose_a}, {"transpose_b", transpose_b}});
}

namespace {
std::vector<ir::NamedAttr> reduce_attrs(std::vector<int64_t> axes, bool keepdim) {
  std::sort(axes.begin(), axes.end());
  return {{"axes", std::move(axes)}, {"keepdim", keepdim}};
}
}  // namespace

Tensor Builder::reduce_sum(Tensor x, std::vector<int64_t> axes, bool keepdim) {
  for (auto& a : axes) a = normalize_axis(x, a);
  return op(OpKind::ReduceSum, {x}, reduce_attrs(std::move(axes), keepdim));
}
Tensor Builder::reduce_max(Tensor x, std::vector<int64_t> axes, bool keepdim) {
  for (auto& a : axes) a = normalize_axis(x, a);
  return op(OpKind::ReduceMax, {x}, reduce_attrs(std::move(axes), keepdim));
}
Tensor Builder::reduce_mean(Tensor x, std::vector<int64_t> axes, bool keepdim) {
  for (auto& a : axes) a = normalize_axis(x, a);
  return op(OpKind::ReduceMean, {x}, reduce_attrs(std::move(axes), keepdim));
}

Tensor Builder::reshape(Tensor x, Shape shape) {
  if (shape == x.shape()) return x;
  return op(OpKind::Reshape, {x}, {}, ir::TensorType{x.dtype(), std::move(shape)});
}

Tensor Builder::permute(Tensor x, std::vector<int64_t> perm) {
  return op(OpKind::Permute, {x}, {{"perm", std::move(perm)}});
}

Tensor Builder::broadcast(Tensor x, Shape shape) {
  return op(OpKind::Broadcast, {x}, {}, ir::TensorType{x.dtype(), std::move(shape)});
}

Tensor Builder::slice(Tensor x, int64_t axis, int64_t start, int64_t end) {
  return op(OpKind::Slice, {x}, {{"axis", normalize_axis(x, axis)}, {"start", start}, {"end", end}});
}

Tensor Builder::concat(const std::vector<Tensor>& xs, int64_t axis) {
  if (xs.empty()) throw ir::Error("building concat: no inputs");
  return op(OpKind::Concat, xs, {{"axis", normalize_axis(xs[0], axis)}});
}

Tensor Builder::gather(Tensor table, Tensor indices, int64_t batch_dims, int64_t padding_idx) {
  return op(OpKind::Gather, {table, indices}, {{"batch_dims", batch_dims}, {"padding_idx", padding_idx}});
}

Tensor Builder::cast(Tensor x, DType to) {
  if (x.dtype() == to) return x;
  return op(OpKind::Cast, {x}, {}, ir::TensorType{to, x.shape()});
}

Tensor Builder::softmax(Tensor x) { return op(OpKind::Softmax, {x}); }

Tensor Builder::layer_norm(Tensor x, Tensor weight, Tensor bias, double eps) {
  return op(OpKind::LayerNorm, {x, weight, bias}, {{"eps", eps}});
}

Tensor Builder::dropout(Tensor x, double p) {
  if (p == 0) return x;
  if (!dropout_seed_) {
    auto existing = graph_.find(names::kDropoutSeed);
    dropout_seed_ = existing ? Tensor(this, *existing) : input(std::string(names::kDropoutSeed), DType::I64, {});
  }
  return op(OpKind::Dropout, {x, *dropout_seed_}, {{"p", p}, {"offset", next_dropout_offset_++}});
}

Tensor Builder::cross_entropy(Tensor logits, Tensor labels, std::optional<Tensor> weights, int64_t ignore_index) {
  std::vector<Tensor> operands{logits, labels};
  if (weights) operands.push_back(*weights);
  return op(OpKind::CrossEntropy, operands, {{"ignore_index", ignore_index}});
}

Tensor Builder::name(Tensor x, const std::string& name) {
  graph_.name_value(x.id(), name);
  return x;
}

void Builder::output(Tensor x, const std::string& name) {
  this->name(x, name);
  graph_.add_output(x.id());
}

Tensor operator+(Tensor a, Tensor b) { return a.builder().op(OpKind::Add, {a, b}); }
Tensor operator-(Tensor a, Tensor b) { return a.builder().op(OpKind::Sub, {a, b}); }
Tensor operator*(Tensor a, Tensor b) { return a.builder().op(OpKind::Mul, {a, b}); }
Tensor operator/(Tensor a, Tensor b) { return a.builder().op(OpKind::Div, {a, b}); }
Tensor operator+(Tensor a, double s) { return a + a.builder().constant(s, a.dtype()); }
Tensor operator-(double s, Tensor a) { return a.builder().constant(s, a.dtype()) - a; }
Tensor operator*(Tensor a, double s) { return a * a.builder().constant(s, a.dtype()); }
Tensor operator-(Tensor a) { return a.builder().op(OpKind::Neg, {a}); }
Tensor exp(Tensor x) { return x.builder().op(OpKind::Exp, {x}); }
Tensor expm1(Tensor x) { return x.builder().op(OpKind::Expm1, {x}); }
Tensor log(Tensor x) { return x.builder().op(OpKind::Log, {x}); }
Tensor sqrt(Tensor x) { return x.builder().op(OpKind::Sqrt, {x}); }
Tensor rsqrt(Tensor x) { return x.builder().op(OpKind::Rsqrt, {x}); }
Tensor tanh(Tensor x) { return x.builder().op(OpKind::Tanh, {x}); }
Tensor gelu(Tensor x) { return x.builder().op(OpKind::Gelu, {x}); }
Tensor relu(Tensor x) { return x.builder().op(OpKind::Relu, {x}); }
Tensor leaky_relu(Tensor x, double slope) { return x.builder().op(OpKind::LeakyRelu, {x}, {{"slope", slope}}); }

}  // namespace bertc::ir
