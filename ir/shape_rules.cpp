// The shape and dtype rules named in ops.def. Each checks what its ops need and says, in terms
// of the op's operand names, what it expected and what it found.
#include "ir/shape_rules.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

namespace bertc::ir {

const TensorType& InferContext::declared() const {
  if (declared_.size() != 1) fail("needs exactly one declared result type");
  return declared_[0];
}

void InferContext::require_float(size_t i) const {
  if (!is_float(operand(i).dtype))
    fail_operand(i, fmt::format("expected a floating-point dtype, found {}", dtype_name(operand(i).dtype)));
}

std::vector<TensorType> infer_result_types(OpKind kind, std::span<const TensorType> operands,
                                           std::span<const AttrValue> attrs,
                                           std::span<const TensorType> declared) {
  const OpInfo& info = op_info(kind);
  InferContext ctx(info, operands, attrs, declared);
  try {
    for (const auto& t : operands) t.numel();
    for (const auto& t : declared) t.numel();
  } catch (const Error& e) {
    ctx.fail(e.what());
  }
  return info.rule(ctx);
}

std::string explain_infer_error(const InferError& e, const OpInfo& info, std::span<const std::string> operand_labels,
                                std::span<const TensorType> operand_types) {
  if (e.operand() < 0) return e.what();
  const auto i = static_cast<size_t>(e.operand());
  return fmt::format("operand {} '{}' ({} : {}): {}", i, info.operand_name(i), operand_labels[i],
                     to_string(operand_types[i]), e.what());
}

namespace rules {
namespace {

// Checks that `axis` indexes a dimension of operand i.
void require_axis(const InferContext& c, size_t i, int64_t axis, std::string_view what) {
  const int64_t rank = c.operand(i).rank();
  if (axis < 0 || axis >= rank)
    c.fail(fmt::format("{} = {} is out of range for rank-{} {} (expected 0..{})", what, axis, rank,
                       c.info().operand_name(i), rank - 1));
}

void require_same_dtype(const InferContext& c, size_t i, size_t j) {
  if (c.operand(i).dtype != c.operand(j).dtype)
    c.fail_operand(j, fmt::format("expected dtype {} (that of {}), found {}", dtype_name(c.operand(i).dtype),
                                  c.info().operand_name(i), dtype_name(c.operand(j).dtype)));
}

// Fails unless operand i is exactly `shape` (a vector of per-feature weights, for instance).
void require_shape(const InferContext& c, size_t i, const Shape& shape, std::string_view why) {
  if (c.operand(i).shape != shape)
    c.fail_operand(i, fmt::format("expected shape {} ({}), found {}", shape_string(shape), why,
                                  shape_string(c.operand(i).shape)));
}

// The declared result type of a layout op, which must keep the operand's dtype.
const TensorType& declared_with_operand_dtype(const InferContext& c) {
  const TensorType& to = c.declared();
  if (to.dtype != c.operand(0).dtype)
    c.fail(fmt::format("declared dtype {} differs from the operand's {}", dtype_name(to.dtype),
                       dtype_name(c.operand(0).dtype)));
  return to;
}

}  // namespace

std::vector<TensorType> Source(const InferContext& c) { return {c.declared()}; }

std::vector<TensorType> Constant(const InferContext& c) {
  const DType dtype = c.declared().dtype;
  if (dtype == DType::Bool) c.fail("a constant must be numeric, found bool");
  // (a value its dtype cannot hold was taken as another: 3000000000 as an i32, 70000 as an f16's
  // infinity, 2^53 + 1 as an i64 read through a double)
  const double value = c.attr<double>("value");
  const FiniteRange range = finite_range(dtype);
  if (is_integer(dtype) && (value != std::trunc(value) || value < range.lowest || value > range.highest))
    c.fail(fmt::format("value {} (as a double) is not a {} a constant can hold: a whole number from {:.0f} to {:.0f}", value,
                       dtype_name(dtype), range.lowest, range.highest));
  if (is_float(dtype) && std::isfinite(value) && (value < range.lowest || value > range.highest))
    c.fail(fmt::format("value {} is beyond {}'s largest finite value {:g} (it would be infinite: write inf for that)",
                       value, dtype_name(dtype), range.highest));
  return {c.declared()};
}

std::vector<TensorType> UnaryFloat(const InferContext& c) {
  c.require_float(0);
  return {c.operand(0)};
}

std::vector<TensorType> Rowwise(const InferContext& c) {
  c.require_float(0);
  if (c.operand(0).rank() == 0) c.fail_operand(0, "expected rank >= 1 (the op works on the last axis), found a scalar");
  return {c.operand(0)};
}

std::vector<TensorType> Binary(const InferContext& c) {
  require_same_dtype(c, 0, 1);
  auto shape = broadcast_shapes(c.operand(0).shape, c.operand(1).shape);
  if (!shape)
    c.fail_operand(1, fmt::format("expected a shape that broadcasts with {}, found {}",
                                  shape_string(c.operand(0).shape), shape_string(c.operand(1).shape)));
  return {{c.operand(0).dtype, *shape}};
}

std::vector<TensorType> Matmul(const InferContext& c) {
  c.require_float(0);
  require_same_dtype(c, 0, 1);
  for (size_t i = 0; i < 2; ++i)
    if (c.operand(i).rank() < 2)
      c.fail_operand(i, fmt::format("expected rank >= 2, found {}", to_string(c.operand(i))));
  const Shape& a = c.operand(0).shape;
  const Shape& b = c.operand(1).shape;
  const bool ta = c.attr<bool>("transpose_a"), tb = c.attr<bool>("transpose_b");
  const int64_t m = a[a.size() - (ta ? 1 : 2)], ka = a[a.size() - (ta ? 2 : 1)];
  const int64_t kb = b[b.size() - (tb ? 1 : 2)], n = b[b.size() - (tb ? 2 : 1)];
  if (ka != kb)
    c.fail_operand(1, fmt::format("expected contraction size {} (from lhs {}{}), found {} in {}{}", ka,
                                  shape_string(a), ta ? " transposed" : "", kb, shape_string(b),
                                  tb ? " transposed" : ""));
  auto batch = broadcast_shapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  if (!batch)
    c.fail_operand(1, fmt::format("expected batch dims that broadcast with lhs {}, found {}",
                                  shape_string(a), shape_string(b)));
  batch->push_back(m);
  batch->push_back(n);
  return {{c.operand(0).dtype, *batch}};
}

std::vector<TensorType> Reduce(const InferContext& c) {
  c.require_float(0);
  const auto& axes = c.attr<std::vector<int64_t>>("axes");
  if (axes.empty()) c.fail("axes is empty: expected at least one axis to reduce");
  for (size_t i = 0; i < axes.size(); ++i) {
    require_axis(c, 0, axes[i], "axes entry");
    if (i > 0 && axes[i] <= axes[i - 1])
      c.fail(fmt::format("axes {} must be strictly ascending", format_attr(axes)));
  }
  const bool keepdim = c.attr<bool>("keepdim");
  Shape out;
  const Shape& in = c.operand(0).shape;
  for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d) {
    const bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!reduced) out.push_back(in[d]);
    else if (keepdim) out.push_back(1);
  }
  return {{c.operand(0).dtype, out}};
}

std::vector<TensorType> Reshape(const InferContext& c) {
  const TensorType& to = declared_with_operand_dtype(c);
  if (to.numel() != c.operand(0).numel())
    c.fail(fmt::format("cannot reshape {} ({} elements) to {} ({} elements)", to_string(c.operand(0)),
                       c.operand(0).numel(), shape_string(to.shape), to.numel()));
  return {to};
}

std::vector<TensorType> Permute(const InferContext& c) {
  const auto& perm = c.attr<std::vector<int64_t>>("perm");
  const Shape& in = c.operand(0).shape;
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(in.size());
  std::iota(iota.begin(), iota.end(), 0);
  if (sorted != iota)
    c.fail(fmt::format("perm {} is not a permutation of the {} dims of {}", format_attr(perm), in.size(),
                       shape_string(in)));
  Shape out;
  for (int64_t p : perm) out.push_back(in[p]);
  return {{c.operand(0).dtype, out}};
}

std::vector<TensorType> Broadcast(const InferContext& c) {
  const TensorType& to = declared_with_operand_dtype(c);
  if (!broadcasts_to(c.operand(0).shape, to.shape))
    c.fail_operand(0, fmt::format("expected a shape that broadcasts to {}, found {}", shape_string(to.shape),
                                  shape_string(c.operand(0).shape)));
  return {to};
}

std::vector<TensorType> Slice(const InferContext& c) {
  const int64_t axis = c.attr<int64_t>("axis"), start = c.attr<int64_t>("start"), end = c.attr<int64_t>("end");
  require_axis(c, 0, axis, "axis");
  Shape out = c.operand(0).shape;
  if (start < 0 || start >= end || end > out[axis])
    c.fail(fmt::format("expected 0 <= start < end <= {} (dim {} of {}), found start = {}, end = {}", out[axis],
                       axis, shape_string(out), start, end));
  out[axis] = end - start;
  return {{c.operand(0).dtype, out}};
}

std::vector<TensorType> Concat(const InferContext& c) {
  const int64_t axis = c.attr<int64_t>("axis");
  require_axis(c, 0, axis, "axis");
  Shape out = c.operand(0).shape;
  for (size_t i = 1; i < c.num_operands(); ++i) {
    require_same_dtype(c, 0, i);
    Shape s = c.operand(i).shape;
    if (s.size() != out.size())
      c.fail_operand(i, fmt::format("expected rank {}, found {}", out.size(), shape_string(s)));
    const int64_t along = s[axis];
    s[axis] = out[axis];
    if (s != out)
      c.fail_operand(i, fmt::format("expected every dim but {} to match {}, found {}", axis,
                                    shape_string(c.operand(0).shape), shape_string(c.operand(i).shape)));
    out[axis] += along;
  }
  return {{c.operand(0).dtype, out}};
}

std::vector<TensorType> Gather(const InferContext& c) {
  const int64_t batch_dims = c.attr<int64_t>("batch_dims");
  const Shape& table = c.operand(0).shape;
  const Shape& idx = c.operand(1).shape;
  if (batch_dims < 0 || batch_dims >= static_cast<int64_t>(table.size()))
    c.fail(fmt::format("batch_dims = {} needs table rank > {}, found {}", batch_dims, batch_dims, shape_string(table)));
  if (!is_integer(c.operand(1).dtype))
    c.fail_operand(1, fmt::format("expected an integer dtype, found {}", dtype_name(c.operand(1).dtype)));
  if (static_cast<int64_t>(idx.size()) < batch_dims ||
      !std::equal(table.begin(), table.begin() + batch_dims, idx.begin()))
    c.fail_operand(1, fmt::format("expected the first {} dims to equal table's {}, found {}", batch_dims,
                                  shape_string(table), shape_string(idx)));
  if (c.attr<int64_t>("padding_idx") < -1)
    c.fail(fmt::format("padding_idx = {} must be a row index or -1 (none)", c.attr<int64_t>("padding_idx")));
  // (past the rows no index reaches it: a padding row that is none, kept as written)
  if (c.attr<int64_t>("padding_idx") >= table[static_cast<size_t>(batch_dims)])
    c.fail(fmt::format("padding_idx = {} is past the table's {} rows: give a row index below {}, or -1 (none)",
                       c.attr<int64_t>("padding_idx"), table[static_cast<size_t>(batch_dims)],
                       table[static_cast<size_t>(batch_dims)]));
  Shape out(idx);
  out.insert(out.end(), table.begin() + batch_dims + 1, table.end());
  return {{c.operand(0).dtype, out}};
}

std::vector<TensorType> Cast(const InferContext& c) {
  if (c.declared().shape != c.operand(0).shape)
    c.fail(fmt::format("declared shape {} differs from the operand's {}", shape_string(c.declared().shape),
                       shape_string(c.operand(0).shape)));
  return {c.declared()};
}

std::vector<TensorType> LayerNorm(const InferContext& c) {
  Rowwise(c);
  const Shape features{c.operand(0).shape.back()};
  for (size_t i = 1; i < 3; ++i) {
    require_same_dtype(c, 0, i);
    require_shape(c, i, features, "the last dim of x");
  }
  if (!(c.attr<double>("eps") > 0)) c.fail(fmt::format("eps = {} must be positive", c.attr<double>("eps")));
  return {c.operand(0)};
}

std::vector<TensorType> Dropout(const InferContext& c) {
  c.require_float(0);
  if (c.operand(1) != TensorType{DType::I64, {}})
    c.fail_operand(1, fmt::format("expected the seed as i64[], found {}", to_string(c.operand(1))));
  const double p = c.attr<double>("p");
  if (!(p >= 0 && p < 1)) c.fail(fmt::format("p = {} must be in [0, 1)", p));
  if (c.attr<int64_t>("offset") < 0) c.fail(fmt::format("offset = {} must be >= 0", c.attr<int64_t>("offset")));
  return {c.operand(0)};
}

std::vector<TensorType> CrossEntropy(const InferContext& c) {
  c.require_float(0);
  if (c.operand(0).rank() != 2)
    c.fail_operand(0, fmt::format("expected [rows, classes], found {}", shape_string(c.operand(0).shape)));
  const Shape rows{c.operand(0).shape[0]};
  if (!is_integer(c.operand(1).dtype))
    c.fail_operand(1, fmt::format("expected an integer dtype, found {}", dtype_name(c.operand(1).dtype)));
  require_shape(c, 1, rows, "one label per row of logits");
  if (c.num_operands() == 3) {
    c.require_float(2);
    require_shape(c, 2, rows, "one weight per row of logits");
  }
  return {{DType::F32, {}}};
}

std::vector<TensorType> Update(const InferContext& c) {
  if (c.operand(1) != c.operand(0))
    c.fail_operand(1, fmt::format("expected the target's type {}, found {}", to_string(c.operand(0)),
                                  to_string(c.operand(1))));
  return {};
}

std::vector<TensorType> GradUnary(const InferContext& c) {
  c.require_float(0);
  for (size_t i = 1; i < c.num_operands(); ++i)
    if (c.operand(i) != c.operand(0))
      c.fail_operand(i, fmt::format("expected {} (the type of dy), found {}", to_string(c.operand(0)),
                                    to_string(c.operand(i))));
  return {c.operand(0)};
}

std::vector<TensorType> GradRowwise(const InferContext& c) {
  Rowwise(c);
  return GradUnary(c);
}

std::vector<TensorType> LayerNormGrad(const InferContext& c) {
  c.require_float(0);
  if (c.operand(1) != c.operand(0))
    c.fail_operand(1, fmt::format("expected {} (the type of dy), found {}", to_string(c.operand(0)),
                                  to_string(c.operand(1))));
  Rowwise(c);
  require_same_dtype(c, 0, 2);
  require_shape(c, 2, {c.operand(0).shape.back()}, "the last dim of x");
  if (!(c.attr<double>("eps") > 0)) c.fail(fmt::format("eps = {} must be positive", c.attr<double>("eps")));
  return {c.operand(0), c.operand(2), c.operand(2)};
}

std::vector<TensorType> CrossEntropyGrad(const InferContext& c) {
  if (c.operand(0) != TensorType{DType::F32, {}})
    c.fail_operand(0, fmt::format("expected the loss gradient as f32[], found {}", to_string(c.operand(0))));
  std::vector<TensorType> rest(c.operands().begin() + 1, c.operands().end());
  const std::vector<AttrValue> attrs = {AttrValue(c.attr<int64_t>("ignore_index"))};
  try {
    infer_result_types(OpKind::CrossEntropy, rest, attrs, {});
  } catch (const InferError& e) {
    // The forward op's rule checks logits, labels and weights; shift its operand index by one.
    if (e.operand() < 0) throw;
    c.fail_operand(static_cast<size_t>(e.operand()) + 1, e.what());
  }
  return {c.operand(1)};
}

std::vector<TensorType> ArgSort(const InferContext& c) {
  const int64_t batch_dims = c.attr<int64_t>("batch_dims"), rows = c.attr<int64_t>("rows");
  if (!is_integer(c.operand(0).dtype))
    c.fail_operand(0, fmt::format("expected an integer dtype, found {}", dtype_name(c.operand(0).dtype)));
  if (batch_dims < 0 || batch_dims > static_cast<int64_t>(c.operand(0).shape.size()))
    c.fail(fmt::format("batch_dims = {} must be in [0, {}] for indices {}", batch_dims, c.operand(0).shape.size(),
                       shape_string(c.operand(0).shape)));
  if (rows < 1) c.fail(fmt::format("rows = {} must be positive", rows));
  const int64_t n = c.operand(0).numel();
  int64_t batches = 1;
  for (int64_t i = 0; i < batch_dims; ++i) batches *= c.operand(0).shape[static_cast<size_t>(i)];
  if (n > INT32_MAX || batches > INT32_MAX / rows)
    c.fail(fmt::format("{} indices of {} rows in {} batches: positions and keys must fit 32 bits", n, rows, batches));
  return {{DType::I32, {n}}};
}

std::vector<TensorType> ScatterAdd(const InferContext& c) {
  const TensorType& table = c.declared();
  if (table.dtype != c.operand(0).dtype)
    c.fail(fmt::format("declared dtype {} differs from the updates' {}", dtype_name(table.dtype),
                       dtype_name(c.operand(0).dtype)));
  // The updates must be exactly what gather(table, indices) would give.
  const std::vector<TensorType> gather_operands = {table, c.operand(1)};
  const std::vector<AttrValue> attrs = {AttrValue(c.attr<int64_t>("batch_dims")),
                                        AttrValue(c.attr<int64_t>("padding_idx"))};
  const TensorType gathered = infer_result_types(OpKind::Gather, gather_operands, attrs, {})[0];
  if (gathered != c.operand(0))
    c.fail_operand(0, fmt::format("expected {} (gather's result for this table and indices), found {}",
                                  to_string(gathered), to_string(c.operand(0))));
  const TensorType order{DType::I32, {c.operand(1).numel()}};
  if (c.operand(2) != order)
    c.fail_operand(2, fmt::format("expected the indices' argsort, {}, found {}", to_string(order), to_string(c.operand(2))));
  return {table};
}

std::vector<TensorType> Pad(const InferContext& c) {
  const int64_t axis = c.attr<int64_t>("axis"), before = c.attr<int64_t>("before"), after = c.attr<int64_t>("after");
  require_axis(c, 0, axis, "axis");
  if (before < 0 || after < 0) c.fail(fmt::format("before = {} and after = {} must be >= 0", before, after));
  Shape out = c.operand(0).shape;
  out[axis] += before + after;
  return {{c.operand(0).dtype, out}};
}

std::vector<TensorType> Optimizer(const InferContext& c) {
  // (param, grad, states..., lr, step): as many states as the op declares (ir::optimizer_states)
  const size_t lr = c.num_operands() - 2, step = c.num_operands() - 1;
  c.require_float(0);
  for (size_t i = 1; i < lr; ++i)
    if (c.operand(i).shape != c.operand(0).shape || !is_float(c.operand(i).dtype))
      c.fail_operand(i, fmt::format("expected a float tensor of the param's shape {}, found {}",
                                    shape_string(c.operand(0).shape), to_string(c.operand(i))));
  if (c.operand(lr) != TensorType{DType::F32, {}})
    c.fail_operand(lr, fmt::format("expected the learning rate as f32[], found {}", to_string(c.operand(lr))));
  if (c.operand(step) != TensorType{DType::I64, {}})
    c.fail_operand(step, fmt::format("expected the step count as i64[], found {}", to_string(c.operand(step))));
  // (the hyperparameters the op declares, each checked where it is one)
  for (const char* beta : {"beta1", "beta2"})
    if (c.info().attr_index(beta))
      if (double b = c.attr<double>(beta); !(b >= 0 && b < 1)) c.fail(fmt::format("{} = {} must be in [0, 1)", beta, b));
  if (c.info().attr_index("eps") && !(c.attr<double>("eps") > 0))
    c.fail(fmt::format("eps = {} must be positive", c.attr<double>("eps")));
  if (!(c.attr<double>("weight_decay") >= 0))
    c.fail(fmt::format("weight_decay = {} must be >= 0", c.attr<double>("weight_decay")));
  std::vector<TensorType> results{c.operand(0)};
  for (size_t i = 2; i < lr; ++i) results.push_back(c.operand(i));
  return results;
}

namespace {

// The shape three operands broadcast to (NumPy's rules), operands 1 and 2 of one dtype.
Shape broadcast_three(const InferContext& c) {
  require_same_dtype(c, 1, 2);
  auto shape = broadcast_shapes(c.operand(1).shape, c.operand(2).shape);
  if (shape) shape = broadcast_shapes(*shape, c.operand(0).shape);
  if (!shape)
    c.fail(fmt::format("shapes {}, {} and {} do not broadcast together", shape_string(c.operand(0).shape),
                       shape_string(c.operand(1).shape), shape_string(c.operand(2).shape)));
  return *shape;
}

}  // namespace

std::vector<TensorType> Where(const InferContext& c) { return {{c.operand(1).dtype, broadcast_three(c)}}; }

std::vector<TensorType> BlockBias(const InferContext& c) {
  for (size_t i = 0; i < 3; ++i) c.require_float(i);
  return {{c.operand(0).dtype, broadcast_three(c)}};
}

std::vector<TensorType> AllFinite(const InferContext& c) {
  for (size_t i = 0; i < c.num_operands(); ++i) c.require_float(i);
  return {{DType::F32, {}}};
}

namespace {

// Checks the bias broadcasting to the scores [B,h,Sq,Sk] (and of q's dtype), the seed and the
// dropout attributes of an attention op.
void check_bias_and_dropout(const InferContext& c, size_t q_at, size_t bias_at, const Shape& scores) {
  require_same_dtype(c, q_at, bias_at);
  if (!broadcasts_to(c.operand(bias_at).shape, scores))
    c.fail_operand(bias_at, fmt::format("expected a shape that broadcasts to the scores {}, found {}",
                                        shape_string(scores), shape_string(c.operand(bias_at).shape)));
  const double p = c.attr<double>("p");
  if (!(p >= 0 && p < 1)) c.fail(fmt::format("p = {} must be in [0, 1)", p));
  // (the operands end with seed?, example_ids?: example_ids is there exactly when blocks is set)
  const bool blocks = c.attr<bool>("blocks");
  // (without it the last operand is the seed, an i64[], or a fixed one)
  if (blocks && (c.num_operands() < c.info().operands.size() - 1 ||
                 c.operand(c.num_operands() - 1) == TensorType{DType::I64, {}}))
    c.fail("blocks = true needs the example_ids operand (the last)");
  if (!blocks && c.num_operands() == c.info().operands.size())
    c.fail("an example_ids operand needs blocks = true");
  const size_t without_ids = c.num_operands() - (blocks ? 1 : 0);
  const size_t seed_at = without_ids - 1;
  const bool has_seed = without_ids == c.info().operands.size() - 1;
  if (p > 0 && !has_seed) c.fail(fmt::format("p = {} needs the seed operand", p));
  if (has_seed && c.operand(seed_at) != TensorType{DType::I64, {}})
    c.fail_operand(seed_at, fmt::format("expected the seed as i64[], found {}{}", to_string(c.operand(seed_at)),
                                        c.operand(seed_at).dtype == DType::I32 ? " (example ids need blocks = true)" : ""));
  if (blocks) {
    const size_t ids_at = c.num_operands() - 1;
    if (scores[2] != scores[3]) c.fail(fmt::format("blocks = true needs self-attention (as many keys as queries), found {} and {}", scores[2], scores[3]));
    // (c.fail, not fail_operand: without a seed the ids sit where the operand list names the seed)
    if (c.operand(ids_at) != TensorType{DType::I32, {scores[0], scores[2]}})
      c.fail(fmt::format("the last operand, example_ids, must be i32[{}, {}], found {}", scores[0], scores[2],
                         to_string(c.operand(ids_at))));
  }
}

// Checks attention's q, k, v [B,h,S,d] (k and v with their own S) and the rest; returns the
// scores' shape.
Shape check_attention(const InferContext& c, size_t q_at) {
  const size_t k_at = q_at + 1, v_at = q_at + 2, bias_at = q_at + 3;
  c.require_float(q_at);
  for (size_t i : {k_at, v_at}) require_same_dtype(c, q_at, i);
  const Shape& q = c.operand(q_at).shape;
  if (q.size() != 4) c.fail_operand(q_at, fmt::format("expected [batch, heads, seq, head_dim], found {}", shape_string(q)));
  const Shape& k = c.operand(k_at).shape;
  if (k.size() != 4 || k[0] != q[0] || k[1] != q[1] || k[3] != q[3])
    c.fail_operand(k_at, fmt::format("expected [{}, {}, seq, {}] to match q, found {}", q[0], q[1], q[3], shape_string(k)));
  if (c.operand(v_at).shape != k) require_shape(c, v_at, k, "the shape of k");
  const Shape scores{q[0], q[1], q[2], k[2]};
  check_bias_and_dropout(c, q_at, bias_at, scores);
  return scores;
}

// Checks attention_qkv's qkv [B,S,3,h,d] and the bias after it; returns the scores' shape.
Shape check_attention_qkv(const InferContext& c, size_t qkv_at) {
  c.require_float(qkv_at);
  const Shape& qkv = c.operand(qkv_at).shape;
  if (qkv.size() != 5 || qkv[2] != 3)
    c.fail_operand(qkv_at, fmt::format("expected [batch, seq, 3, heads, head_dim], found {}", shape_string(qkv)));
  const Shape scores{qkv[0], qkv[3], qkv[1], qkv[1]};
  check_bias_and_dropout(c, qkv_at, qkv_at + 1, scores);
  return scores;
}

// The logsumexp operand of a backward: f32 [B,h,Sq].
void require_lse(const InferContext& c, size_t lse_at, const Shape& scores) {
  const TensorType lse{DType::F32, {scores[0], scores[1], scores[2]}};
  if (c.operand(lse_at) != lse)
    c.fail_operand(lse_at, fmt::format("expected attention's logsumexp {}, found {}", to_string(lse), to_string(c.operand(lse_at))));
}

}  // namespace

std::vector<TensorType> Attention(const InferContext& c) {
  const Shape scores = check_attention(c, 0);
  return {c.operand(0), {DType::F32, {scores[0], scores[1], scores[2]}}};
}

std::vector<TensorType> AttentionGrad(const InferContext& c) {
  const Shape scores = check_attention(c, 1);
  require_shape(c, 0, c.operand(1).shape, "the shape of attention's output");
  require_shape(c, 5, c.operand(1).shape, "attention's output");
  require_lse(c, 6, scores);
  return {c.operand(1), c.operand(2), c.operand(3)};
}

std::vector<TensorType> AttentionQkv(const InferContext& c) {
  const Shape scores = check_attention_qkv(c, 0);
  const Shape& qkv = c.operand(0).shape;
  return {{c.operand(0).dtype, {qkv[0], qkv[1], qkv[3], qkv[4]}}, {DType::F32, {scores[0], scores[1], scores[2]}}};
}

std::vector<TensorType> AttentionQkvGrad(const InferContext& c) {
  const Shape scores = check_attention_qkv(c, 1);
  const Shape& qkv = c.operand(1).shape;
  const TensorType out{c.operand(1).dtype, {qkv[0], qkv[1], qkv[3], qkv[4]}};
  for (size_t i : {size_t{0}, size_t{3}})
    if (c.operand(i) != out)
      c.fail_operand(i, fmt::format("expected {} (attention_qkv's output for this qkv), found {}", to_string(out),
                                    to_string(c.operand(i))));
  require_lse(c, 4, scores);
  return {c.operand(1)};
}

// Result types are declared (one per region output); the verifier checks them against the region.
std::vector<TensorType> Fused(const InferContext& c) {
  if (c.declared_types().empty()) c.fail("a fused op needs at least one result");
  return {c.declared_types().begin(), c.declared_types().end()};
}

}  // namespace rules
}  // namespace bertc::ir
