// Expression emission over a region: each value is computed at most once per scope and
// coordinates, into a local named after it.
#include "codegen/emitter.h"

#include <cmath>
#include <limits>
#include <utility>

#include <fmt/args.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace bertc::codegen {

using ir::DType;
using ir::OpKind;

std::string dropout_offset(int64_t offset) { return fmt::format("BX_DROPOUT_OFFSET({})", offset); }

std::string storage_type(DType dtype) {
  switch (dtype) {
    case DType::F32: return "float";
    case DType::F16: return "bx_f16";
    case DType::BF16: return "bx_bf16";
    case DType::I64: return "bx_i64";
    case DType::I32: return "int";
    case DType::U8: case DType::Bool: return "unsigned char";
    case DType::F64: break;
  }
  throw ir::Error("kernels do not handle f64 values");
}

std::string float_literal(double value) {
  const float f = static_cast<float>(value);
  if (std::isinf(f)) return f > 0 ? "bx_inf()" : "(-bx_inf())";
  if (std::isnan(f)) return "(bx_inf() - bx_inf())";
  return fmt::format("{:.9g}f", f).find_first_of(".e") == std::string::npos ? fmt::format("{:.9g}.0f", f)
                                                                          : fmt::format("{:.9g}f", f);
}

Emitter::Emitter(const ir::Graph& body, std::vector<std::string> inputs)
    : body_(body), inputs_(std::move(inputs)), input_index_(body.num_values(), -1), scopes_(1) {
  const auto in = body.values_of(OpKind::Input);
  if (in.size() != inputs_.size())
    throw ir::Error(fmt::format("emitter: region has {} inputs, {} parameter names given", in.size(), inputs_.size()));
  for (size_t i = 0; i < in.size(); ++i) input_index_[in[i]] = static_cast<int>(i);
}

bool Emitter::is_integer(ir::ValueId v) const { return !ir::is_float(body_.value(v).type.dtype); }

std::string Emitter::linear(const ir::Shape& shape, const Coords& at) {
  if (shape.empty()) return "0";
  std::string s = "(" + at[0] + ")";
  for (size_t i = 1; i < shape.size(); ++i) s = fmt::format("({} * {} + ({}))", s, shape[i], at[i]);
  return s;
}

Coords Emitter::decompose(const ir::Shape& shape, std::string_view index) {
  Coords c(shape.size());
  const std::string rest = local("bx_i64", index);
  int64_t inner = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    const std::string div = inner == 1 ? rest : fmt::format("{} / {}", rest, inner);
    c[i] = i == 0 ? local("bx_i64", div) : local("bx_i64", fmt::format("({}) % {}", div, shape[i]));
    inner *= shape[i];
  }
  return c;
}

void Emitter::line(std::string_view statement) { code_ += std::string(2 * indent_, ' ') + std::string(statement) + "\n"; }

void Emitter::open(std::string_view head) {
  line(std::string(head) + " {");
  ++indent_;
  scopes_.emplace_back();
}

void Emitter::close() {
  --indent_;
  scopes_.pop_back();
  line("}");
}

std::string Emitter::fresh(std::string_view prefix) { return fmt::format("{}{}", prefix, counter_++); }

std::string Emitter::local(std::string_view type, std::string_view expr) {
  const std::string name = fresh("t");
  line(fmt::format("const {} {} = {};", type, name, expr));
  return name;
}

std::string Emitter::take() { return std::exchange(code_, {}); }

static std::string key_of(ir::ValueId v, const Coords& at) { return fmt::format("{}@{}", v, fmt::join(at, ",")); }

void Emitter::bind(ir::ValueId v, const Coords& at, std::string expr) { scopes_.back()[key_of(v, at)] = std::move(expr); }

void Emitter::flat(int64_t n, std::string index) {
  flat_n_ = n;
  flat_index_ = std::move(index);
}

std::string Emitter::at(ir::ValueId v, const Coords& at_coords) {
  const ir::TensorType& type = body_.value(v).type;
  // In flat mode coordinates are implied: the linear index, or 0 for a single element.
  const Coords flat_at = flat_n_ < 0 ? Coords{} : type.numel() == flat_n_ ? Coords(type.shape.size(), "") : Coords(type.shape.size(), "0");
  if (flat_n_ >= 0 && type.numel() != flat_n_ && type.numel() != 1)
    throw ir::Error(fmt::format("flat kernel: value {} has {} elements, neither {} nor 1", v, type.numel(), flat_n_));
  const Coords& at = flat_n_ < 0 ? at_coords : flat_at;
  if (at.size() != body_.value(v).type.shape.size())
    throw ir::Error(fmt::format("emitter: value {} of rank {} asked at {} coordinates", v,
                                body_.value(v).type.shape.size(), at.size()));
  const std::string key = key_of(v, at);
  for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
    if (auto it = s->find(key); it != s->end()) return it->second;
  const ir::Op& op = body_.producer(v);
  std::string expr = compute(op, v, at);
  if (op.results.size() > 1) return scopes_.back().at(key);  // compute bound every result
  if (op.kind != OpKind::Constant) expr = local(is_integer(v) ? "bx_i64" : "float", expr);
  scopes_.back()[key] = expr;
  return expr;
}

std::string Emitter::rounded(DType dtype, std::string expr) const {
  if (dtype == DType::F16) return "bx_round_f16(" + expr + ")";
  if (dtype == DType::BF16) return "bx_round_bf16(" + expr + ")";
  return expr;
}

std::string Emitter::load_input(size_t input, const Coords& at) {
  const ir::ValueId v = body_.values_of(OpKind::Input)[input];
  return fmt::format("bx_ld({}, {})", inputs_[input], element_index(body_.value(v).type, at));
}

std::string Emitter::element_index(const ir::TensorType& type, const Coords& at) const {
  if (flat_n_ >= 0) return type.numel() == flat_n_ ? flat_index_ : "0";
  return linear(type.shape, at);
}

// Operand i of an elementwise op at the op's result coordinates (NumPy broadcasting).
std::string Emitter::operand_at(const ir::Op& op, size_t i, const Coords& at) {
  const ir::ValueId x = op.operands[i];
  if (flat_n_ >= 0) return this->at(x, {});
  const ir::Shape& s = body_.value(x).type.shape;
  const ir::Shape& r = body_.value(op.results.at(0)).type.shape;
  Coords c(s.size());
  for (size_t j = 0; j < s.size(); ++j) {
    const size_t k = j + r.size() - s.size();
    c[j] = s[j] == 1 && r[k] != 1 ? "0" : at[k];
  }
  return this->at(x, c);
}

std::string Emitter::compute(const ir::Op& op, ir::ValueId v, const Coords& at) {
  const ir::Shape& shape = body_.value(v).type.shape;
  if (flat_n_ >= 0 && (op.kind == OpKind::Slice || op.kind == OpKind::Permute || op.kind == OpKind::Pad ||
                       op.kind == OpKind::Concat || op.kind == OpKind::Gather))
    throw ir::Error(fmt::format("flat kernel: {} moves elements", op.info().name));
  if (flat_n_ >= 0 && op.kind == OpKind::Reshape) return this->at(op.operands[0], {});
  switch (op.kind) {
    case OpKind::Input: return load_input(static_cast<size_t>(input_index_[v]), at);
    case OpKind::Constant:
      return is_integer(v) ? fmt::format("((bx_i64){})", static_cast<int64_t>(op.attr<double>("value")))
                           : float_literal(op.attr<double>("value"));
    case OpKind::Broadcast: return operand_at(op, 0, at);
    case OpKind::Reshape: {
      const ir::ValueId x = op.operands[0];
      return this->at(x, decompose(body_.value(x).type.shape, linear(shape, at)));
    }
    case OpKind::Slice: {
      Coords c = at;
      const auto axis = static_cast<size_t>(op.attr<int64_t>("axis"));
      c[axis] = fmt::format("({} + {})", at[axis], op.attr<int64_t>("start"));
      return this->at(op.operands[0], c);
    }
    case OpKind::Permute: {
      const auto& perm = op.attr<std::vector<int64_t>>("perm");
      Coords c(at.size());
      for (size_t i = 0; i < perm.size(); ++i) c[static_cast<size_t>(perm[i])] = at[i];
      return this->at(op.operands[0], c);
    }
    case OpKind::Pad: return padded(op, at);
    case OpKind::Concat: return concatenated(op, at);
    case OpKind::Gather: return gathered(op, at);
    default: return pointwise(op, at);
  }
}

// Zero outside the operand's extent along the padded axis.
std::string Emitter::padded(const ir::Op& op, const Coords& at) {
  const auto axis = static_cast<size_t>(op.attr<int64_t>("axis"));
  const int64_t extent = body_.value(op.operands[0]).type.shape[axis];
  const std::string result = fresh("pad");
  const bool integer = is_integer(op.results[0]);
  line(fmt::format("{} {} = 0;", integer ? "bx_i64" : "float", result));
  Coords c = at;
  c[axis] = local("bx_i64", fmt::format("{} - {}", at[axis], op.attr<int64_t>("before")));
  open(fmt::format("if ({0} >= 0 && {0} < {1})", c[axis], extent));
  line(fmt::format("{} = {};", result, this->at(op.operands[0], c)));
  close();
  return result;
}

std::string Emitter::concatenated(const ir::Op& op, const Coords& at) {
  const auto axis = static_cast<size_t>(op.attr<int64_t>("axis"));
  const std::string result = fresh("cat");
  line(fmt::format("{} {} = 0;", is_integer(op.results[0]) ? "bx_i64" : "float", result));
  int64_t start = 0;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const int64_t extent = body_.value(op.operands[i]).type.shape[axis];
    Coords c = at;
    c[axis] = fmt::format("({} - {})", at[axis], start);
    open(fmt::format("{}if ({} < {})", i == 0 ? "" : "else ", at[axis], start + extent));
    line(fmt::format("{} = {};", result, this->at(op.operands[i], c)));
    close();
    start += extent;
  }
  return result;
}

// table[b..., idx, rest...] with idx = indices[b..., i...]: result coordinates are
// [b..., i..., rest...].
std::string Emitter::gathered(const ir::Op& op, const Coords& at) {
  const auto batch = static_cast<size_t>(op.attr<int64_t>("batch_dims"));
  const size_t index_rank = body_.value(op.operands[1]).type.shape.size();
  const Coords index_at(at.begin(), at.begin() + static_cast<std::ptrdiff_t>(index_rank));
  const std::string id = this->at(op.operands[1], index_at);
  Coords table_at(at.begin(), at.begin() + static_cast<std::ptrdiff_t>(batch));
  table_at.push_back(id);
  table_at.insert(table_at.end(), at.begin() + static_cast<std::ptrdiff_t>(index_rank), at.end());
  return this->at(op.operands[0], table_at);
}

namespace {

// An attribute as a kernel expression reads it ({name}): a float as f32 literal (the kernels
// compute in float, as the reference's float run does), an integer or flag as a number.
std::string attr_literal(const ir::Op& op, const ir::AttrSpec& spec) {
  switch (spec.kind) {
    case ir::AttrKind::Float: return float_literal(op.attr<double>(spec.name));
    case ir::AttrKind::Int: return fmt::format("{}LL", op.attr<int64_t>(spec.name));
    case ir::AttrKind::Bool: return op.attr<bool>(spec.name) ? "1" : "0";
    case ir::AttrKind::Ints:
    case ir::AttrKind::String: break;
  }
  throw ir::Error(fmt::format("ops.def: {}'s kernel expression may read its number attributes only, not '{}'",
                              op.info().name, spec.name));
}

}  // namespace

std::string Emitter::pointwise(const ir::Op& op, const Coords& at) {
  const DType dtype = body_.value(op.results.at(0)).type.dtype;
  auto x = [&](size_t i) { return operand_at(op, i, at); };
  // Most elementwise ops are one expression over their operands, given in ops.def. The operands
  // are computed last first (their statements come in that order): so the kernels, named by the
  // hash of their source, stay the ones bertc has always made.
  if (const std::string_view expression = op.info().traits.kernel; !expression.empty()) {
    std::vector<std::string> operands(op.operands.size());
    for (size_t i = operands.size(); i-- > 0;) operands[i] = x(i);
    fmt::dynamic_format_arg_store<fmt::format_context> args;
    for (const std::string& o : operands) args.push_back(o);
    // Attributes by name ({slope}); the table's names are string literals, so they outlive args.
    for (const ir::AttrSpec& a : op.info().attrs)
      if (expression.find("{" + std::string(a.name) + "}") != std::string_view::npos)
        args.push_back(fmt::arg(a.name.data(), attr_literal(op, a)));
    return rounded(dtype, fmt::vformat(expression, args));
  }
  std::string e;
  switch (op.kind) {
    case OpKind::Where: {
      const std::string c = x(0), a = x(1), b = x(2);
      e = fmt::format("({} != 0 ? {} : {})", c, a, b);
      break;
    }
    case OpKind::Cast: {
      const std::string in = x(0);
      if (dtype == DType::Bool) e = fmt::format("(bx_i64)({} != 0)", in);
      else if (!ir::is_float(dtype)) e = is_integer(op.operands[0]) ? in : fmt::format("(bx_i64)({})", in);  // toward zero
      else e = is_integer(op.operands[0]) ? fmt::format("(float)({})", in) : in;
      break;
    }
    case OpKind::Dropout: {
      const double p = op.attr<double>("p");
      const auto threshold = static_cast<uint32_t>(std::ceil(p * 16777216.0));
      const float scale = 1.0f / (1.0f - static_cast<float>(p));  // as the reference: in float
      const std::string seed = this->at(op.operands[1], Coords(body_.value(op.operands[1]).type.shape.size(), "0"));
      e = fmt::format("(bx_dropout_keep({}, {}, {}, {}u) ? {} * {} : 0.0f)", seed, dropout_offset(op.attr<int64_t>("offset")),
                      element_index(body_.value(op.results[0]).type, at), threshold, x(0), float_literal(scale));
      break;
    }
    case OpKind::Adamw: {
      // p' = p - lr * (m^ / (sqrt(v^) + eps) + wd * p), m^ and v^ bias-corrected by the step count.
      const double b1 = op.attr<double>("beta1"), b2 = op.attr<double>("beta2");
      const std::string p = x(0), g = x(1), m = x(2), v = x(3), lr = x(4), step = x(5);
      std::string m1 = local("float", fmt::format("{} * {} + {} * {}", float_literal(b1), m, float_literal(1 - b1), g));
      std::string v1 = local("float", fmt::format("{} * {} + {} * {} * {}", float_literal(b2), v, float_literal(1 - b2), g, g));
      std::string variance_step = step;
      // 1-bit Adam past freeze_step: exp_avg is already the step's momentum, exp_avg_sq is frozen
      // and bias-corrected as at freeze_step (ir/ops.def).
      if (const double freeze = op.attr<double>("freeze_step"); freeze > 0) {
        const std::string frozen = local("bool", fmt::format("(float){} > {}", step, float_literal(freeze)));
        m1 = local("float", fmt::format("{} ? {} : {}", frozen, m, m1));
        v1 = local("float", fmt::format("{} ? {} : {}", frozen, v, v1));
        variance_step = local("float", fmt::format("{} ? {} : (float){}", frozen, float_literal(freeze), step));
      }
      // (1 - beta^t as -(e^(t ln beta) - 1), ln beta in double here: 1.0f - powf(beta, t) keeps
      // only the digits powf gets right past 1 - beta^t's leading ones, 1000 times its error at
      // beta2 = 0.999 and t = 1; lower_lamb.cpp says the same of LAMB's)
      const std::string c1 = local("float", fmt::format("-bx_expm1((float){} * {})", step, float_literal(std::log(b1))));
      const std::string c2 = local("float", fmt::format("-bx_expm1((float){} * {})", variance_step, float_literal(std::log(b2))));
      const std::string u = local(
          "float", fmt::format("({} / {}) / (bx_sqrt({} / {}) + {}) + {} * {}", m1, c1, v1, c2,
                               float_literal(op.attr<double>("eps")), float_literal(op.attr<double>("weight_decay")), p));
      bind(op.results[0], at, local("float", rounded(dtype, fmt::format("{} - {} * {}", p, lr, u))));
      bind(op.results[1], at, local("float", rounded(body_.value(op.results[1]).type.dtype, m1)));
      bind(op.results[2], at, local("float", rounded(body_.value(op.results[2]).type.dtype, v1)));
      return {};
    }
    case OpKind::Lion: {
      // p' = p - lr * (sign(beta1 m + (1 - beta1) g) + wd * p), m' = beta2 m + (1 - beta2) g.
      const double b1 = op.attr<double>("beta1"), b2 = op.attr<double>("beta2");
      const std::string p = x(0), g = x(1), m = x(2), lr = x(3);
      const std::string c = local("float", fmt::format("{} * {} + {} * {}", float_literal(b1), m, float_literal(1 - b1), g));
      const std::string sign = local("float", fmt::format("({0} > 0.0f ? 1.0f : ({0} < 0.0f ? -1.0f : 0.0f))", c));
      const std::string u = local("float", fmt::format("{} + {} * {}", sign, float_literal(op.attr<double>("weight_decay")), p));
      bind(op.results[0], at, local("float", rounded(dtype, fmt::format("{} - {} * {}", p, lr, u))));
      bind(op.results[1], at,
           local("float", rounded(body_.value(op.results[1]).type.dtype,
                                  fmt::format("{} * {} + {} * {}", float_literal(b2), m, float_literal(1 - b2), g))));
      return {};
    }
    default:
      throw ir::Error(fmt::format("emitter: {} is not an elementwise op; its kernel family computes it",
                                  op.info().name));
  }
  return rounded(dtype, e);
}

}  // namespace bertc::codegen
