// Graph storage: appending ops, naming values, erasing ops.
#include "ir/graph.h"

#include <cctype>

namespace bertc::ir {

Region::Region() = default;
Region::Region(Graph graph) : graph_(std::make_unique<Graph>(std::move(graph))) {}
Region::Region(const Region& other) : graph_(other.graph_ ? std::make_unique<Graph>(*other.graph_) : nullptr) {}
Region& Region::operator=(const Region& other) {
  if (this != &other) graph_ = other.graph_ ? std::make_unique<Graph>(*other.graph_) : nullptr;
  return *this;
}
Region::Region(Region&&) noexcept = default;
Region& Region::operator=(Region&&) noexcept = default;
Region::~Region() = default;

bool is_valid_value_name(std::string_view name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  for (char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    if (!(std::isalnum(c) || c == '_' || c == '.')) return false;
  }
  return true;
}

OpId Graph::add_op(OpKind kind, std::vector<ValueId> operands, std::vector<AttrValue> attrs,
                   std::vector<TensorType> result_types, SourceLoc loc) {
  const auto id = static_cast<OpId>(ops_.size());
  Op op{kind, std::move(operands), {}, std::move(attrs), loc};
  for (size_t i = 0; i < result_types.size(); ++i) {
    op.results.push_back(static_cast<ValueId>(values_.size()));
    values_.push_back(Value{std::move(result_types[i]), {}, id, static_cast<uint32_t>(i)});
  }
  ops_.push_back(std::move(op));
  return id;
}

void Graph::name_value(ValueId id, std::string name) {
  if (!is_valid_value_name(name))
    throw Error(fmt::format("'{}' is not a valid value name (expected [A-Za-z_][A-Za-z0-9_.]*)", name));
  if (auto it = by_name_.find(name); it != by_name_.end() && it->second != id)
    throw Error(fmt::format("value name '%{}' is already used", name));
  Value& v = values_.at(id);
  if (!v.name.empty()) by_name_.erase(v.name);
  by_name_[name] = id;
  v.name = std::move(name);
}

void Graph::set_attr(OpId id, std::string_view name, AttrValue value) {
  Op& op = ops_.at(id);
  auto index = op.info().attr_index(name);
  if (!index || kind_of(value) != op.info().attrs[*index].kind)
    throw Error(fmt::format("{} has no {} attribute '{}'", op.info().name, attr_kind_name(kind_of(value)), name));
  op.attrs[*index] = std::move(value);
}

std::optional<ValueId> Graph::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

std::vector<ValueId> Graph::values_of(OpKind kind) const {
  std::vector<ValueId> out;
  for (const Op& op : ops_)
    if (op.kind == kind) out.insert(out.end(), op.results.begin(), op.results.end());
  return out;
}

void Graph::retain_ops(const std::vector<bool>& keep) {
  if (keep.size() != ops_.size())
    throw Error(fmt::format("retain_ops: {} flags for {} ops", keep.size(), ops_.size()));
  std::vector<Op> kept;
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (keep[i]) {
      kept.push_back(std::move(ops_[i]));
      continue;
    }
    for (ValueId r : ops_[i].results)
      if (!values_[r].name.empty()) by_name_.erase(values_[r].name);
  }
  ops_ = std::move(kept);
  for (OpId i = 0; i < ops_.size(); ++i)
    for (ValueId r : ops_[i].results) values_[r].producer = i;
}

}  // namespace bertc::ir
