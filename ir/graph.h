// The graph IR: SSA values with static types, and ops in topological order that define them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/error.h"
#include "ir/op_info.h"

namespace bertc::ir {

using ValueId = uint32_t;
using OpId = uint32_t;

struct Value {
  TensorType type;
  std::string name;  // empty: unnamed (printed as %N)
  OpId producer = 0;
  uint32_t result_index = 0;
};

class Graph;

// A graph nested in an op (a fused kernel's body), owned by value: its input ops stand for the
// op's operands in order, its outputs are the op's results in order.
class Region {
 public:
  Region();
  explicit Region(Graph graph);
  Region(const Region& other);
  Region& operator=(const Region& other);
  Region(Region&&) noexcept;
  Region& operator=(Region&&) noexcept;
  ~Region();

  explicit operator bool() const { return graph_ != nullptr; }
  const Graph& graph() const { return *graph_; }
  Graph& graph() { return *graph_; }

 private:
  std::unique_ptr<Graph> graph_;
};

struct Op {
  OpKind kind;
  std::vector<ValueId> operands;
  std::vector<ValueId> results;
  std::vector<AttrValue> attrs;  // complete, in the schema order of op_info(kind)
  SourceLoc loc;
  // Where the op comes from ("bert.encoder.layer.3.attention"; backward ops "backward/...",
  // recomputed ones "recompute/..."), printed as loc("..."); empty when unknown.
  std::string scope;
  Region region;  // the body of a fused op; empty otherwise

  const OpInfo& info() const { return op_info(kind); }
  ValueId result() const { return results.at(0); }
  template <typename T>
  const T& attr(std::string_view name) const {
    return std::get<T>(attrs.at(info().attr_index(name).value()));
  }
};

// A value name may be used in IR text: [A-Za-z_][A-Za-z0-9_.]*
bool is_valid_value_name(std::string_view name);

class Graph {
 public:
  explicit Graph(std::string name = "main") : name_(std::move(name)) {}

  const std::string& name() const { return name_; }

  // Appends an op with the given (already checked or to-be-verified) result types.
  OpId add_op(OpKind kind, std::vector<ValueId> operands, std::vector<AttrValue> attrs,
              std::vector<TensorType> result_types, SourceLoc loc = {});

  const std::vector<Op>& ops() const { return ops_; }
  const Op& op(OpId id) const { return ops_.at(id); }
  const Value& value(ValueId id) const { return values_.at(id); }
  // For passes that rewrite in place: the op's scope, region and attributes.
  void set_scope(OpId id, std::string scope) { ops_.at(id).scope = std::move(scope); }
  void set_region(OpId id, Region region) { ops_.at(id).region = std::move(region); }
  // Sets attribute `name` (which the op's schema must have, of the same kind).
  void set_attr(OpId id, std::string_view name, AttrValue value);
  const Op& producer(ValueId id) const { return ops_.at(values_.at(id).producer); }
  size_t num_values() const { return values_.size(); }

  // Gives a value a name; throws ir::Error if the name is malformed or taken.
  void name_value(ValueId id, std::string name);
  std::optional<ValueId> find(std::string_view name) const;

  const std::vector<ValueId>& outputs() const { return outputs_; }
  void add_output(ValueId id) { outputs_.push_back(id); }
  void set_outputs(std::vector<ValueId> ids) { outputs_ = std::move(ids); }

  // Values defined by ops of one kind, in op order (e.g. every param).
  std::vector<ValueId> values_of(OpKind kind) const;

  // Keeps op i where keep[i] (one flag per op, in op order) and removes the rest. The caller keeps
  // the graph consistent (nothing kept may use a removed value); value ids of kept ops stay valid.
  void retain_ops(const std::vector<bool>& keep);

 private:
  std::string name_;
  std::vector<Op> ops_;
  std::vector<Value> values_;
  std::vector<ValueId> outputs_;
  std::unordered_map<std::string, ValueId> by_name_;
};

}  // namespace bertc::ir
