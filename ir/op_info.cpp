// The op table: ops.def expanded into OpInfo entries.
#include "ir/op_info.h"

#include <limits>

#include "ir/error.h"
#include "ir/graph.h"
#include "ir/shape_rules.h"

namespace bertc::ir {
namespace {

// "logits, labels, weights?" -> three OperandSpecs; "inputs..." is variadic.
std::vector<OperandSpec> operand_specs(std::string_view list) {
  std::vector<OperandSpec> specs;
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    OperandSpec spec;
    if (item.ends_with("...")) { spec.variadic = true; item.remove_suffix(3); }
    if (item.ends_with("?")) { spec.optional = true; item.remove_suffix(1); }
    spec.name = std::string(item);
    specs.push_back(spec);
  }
  return specs;
}

#define REQ(n, k) AttrSpec{#n, AttrKind::k, std::nullopt},
#define OPT(n, k, d) AttrSpec{#n, AttrKind::k, attr_default<AttrKind::k>(d)},
#define TRAITS(pattern, family, flags, gradient) FusionPattern::pattern, KernelFamily::family, flags, Gradient::gradient
#define BERTC_OP(id, text, rule, results, operands, flops, attrs, traits, kernel, doc)    \
  OpInfo{OpKind::id, #text, &rules::rule, ResultTypes::results, operand_specs(operands), \
         flops, {attrs}, OpTraits{traits, kernel}, doc},
// A function-local static, so other static initialisers may use the table safely.
const std::vector<OpInfo>& table() {
  static const std::vector<OpInfo> ops = {
#include "ir/ops.def"
  };
  return ops;
}
#undef BERTC_OP
#undef TRAITS
#undef OPT
#undef REQ

}  // namespace

size_t OpInfo::min_operands() const {
  size_t n = 0;
  for (const auto& o : operands) n += o.optional ? 0 : 1;
  return n;
}

size_t OpInfo::max_operands() const {
  for (const auto& o : operands)
    if (o.variadic) return std::numeric_limits<size_t>::max();
  return operands.size();
}

std::string OpInfo::operand_name(size_t i) const {
  if (!operands.empty() && operands.back().variadic && i + 1 >= operands.size())
    return operands.back().name + "[" + std::to_string(i - (operands.size() - 1)) + "]";
  return i < operands.size() ? operands[i].name : "extra";
}

std::string OpInfo::operand_signature() const {
  std::string out;
  for (const auto& o : operands)
    out += (out.empty() ? "" : ", ") + o.name + (o.optional ? "?" : o.variadic ? "..." : "");
  return out;
}

std::optional<size_t> OpInfo::attr_index(std::string_view attr_name) const {
  for (size_t i = 0; i < attrs.size(); ++i)
    if (attrs[i].name == attr_name) return i;
  return std::nullopt;
}

const OpInfo& op_info(OpKind kind) { return table()[static_cast<size_t>(kind)]; }

std::optional<OpKind> op_kind_from_name(std::string_view name) {
  for (const auto& info : table())
    if (info.name == name) return info.kind;
  return std::nullopt;
}

std::span<const OpInfo> all_ops() { return table(); }

bool launches_kernel(OpKind kind) {
  const FusionPattern p = op_info(kind).traits.pattern;
  return p != FusionPattern::Source && p != FusionPattern::View && p != FusionPattern::Effect;
}

FusionPattern fusion_pattern(const Op& op) {
  if (op.kind == OpKind::Gather && op.attr<int64_t>("batch_dims") != 0) return FusionPattern::Opaque;
  return op.info().traits.pattern;
}

KernelFamily kernel_family(const Op& op) {
  if (op.kind != OpKind::Fused) return op.info().traits.family;
  const std::string& name = op.attr<std::string>("kernel");
  const auto family = enum_from_name<KernelFamily>(name);
  if (!family || *family == KernelFamily::None)
    throw Error(fmt::format("fused op names kernel family '{}' (known: {})", name, enum_choice_list<KernelFamily>()));
  return *family;
}

}  // namespace bertc::ir

namespace bertc::ir {

std::string unknown_attr_message(const OpInfo& info, std::string_view name) {
  std::vector<std::string_view> known;
  for (const auto& spec : info.attrs) known.push_back(spec.name);
  return fmt::format("{} has no attribute '{}' (it takes: {})", info.name, name,
                     known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", ")));
}

std::vector<AttrValue> complete_attrs(const OpInfo& info, std::span<const NamedAttr> given) {
  std::vector<std::optional<AttrValue>> slots(info.attrs.size());
  for (const auto& a : given) {
    auto index = info.attr_index(a.name);
    if (!index) throw Error(unknown_attr_message(info, a.name));
    const AttrSpec& spec = info.attrs[*index];
    if (slots[*index]) throw Error(fmt::format("{}: attribute '{}' given twice", info.name, a.name));
    if (kind_of(a.value) != spec.kind)
      throw Error(fmt::format("{}: attribute '{}' expects a {}, found {} {}", info.name, a.name,
                              attr_kind_name(spec.kind), attr_kind_name(kind_of(a.value)), format_attr(a.value)));
    slots[*index] = a.value;
  }
  std::vector<AttrValue> out;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (!slots[i] && !info.attrs[i].default_value)
      throw Error(fmt::format("{}: missing required attribute '{}' ({})", info.name, info.attrs[i].name,
                              attr_kind_name(info.attrs[i].kind)));
    out.push_back(slots[i] ? *slots[i] : *info.attrs[i].default_value);
  }
  return out;
}

std::vector<std::string> optimizer_states(OpKind kind) {
  const OpInfo& info = op_info(kind);
  if (info.traits.pattern != FusionPattern::Optimizer || info.operands.size() < 4)
    throw Error(fmt::format("{} is not an optimizer op (param, grad, states..., lr, step)", info.name));
  std::vector<std::string> states;
  for (size_t i = 2; i + 2 < info.operands.size(); ++i) states.push_back(info.operands[i].name);
  return states;
}

bool names_optimizer_state(std::string_view name) {
  for (const OpInfo& op : table()) {
    if (op.traits.pattern != FusionPattern::Optimizer) continue;
    for (const std::string& state : optimizer_states(op.kind))
      if (name.size() > state.size() + 1 && name.ends_with(state) && name[name.size() - state.size() - 1] == '.')
        return true;
  }
  return false;
}

}  // namespace bertc::ir
