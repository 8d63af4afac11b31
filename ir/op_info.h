// Op kinds and their static descriptions, generated from ops.def.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/attr.h"
#include "ir/tensor_type.h"

namespace bertc::ir {

enum class OpKind : uint16_t {
#define BERTC_OP(id, ...) id,
#include "ir/ops.def"
#undef BERTC_OP
};

class InferContext;
// Checks an op's operands and attributes and returns its result types (shape_rules.h).
using ShapeRule = std::vector<TensorType> (*)(const InferContext&);

enum class ResultTypes { Inferred, Declared };

struct OperandSpec {
  std::string name;
  bool optional = false;  // "x?"
  bool variadic = false;  // "xs...": one or more
};

struct OpInfo {
  OpKind kind;
  std::string_view name;
  ShapeRule rule;
  ResultTypes result_types;
  std::vector<OperandSpec> operands;
  int flops_per_element;
  std::vector<AttrSpec> attrs;
  std::string_view doc;

  size_t min_operands() const;
  size_t max_operands() const;  // SIZE_MAX when variadic
  // Name shown for operand i in messages (the variadic name repeats with its index).
  std::string operand_name(size_t i) const;
  std::optional<size_t> attr_index(std::string_view attr_name) const;
  // "logits, labels, weights?" as in ops.def, for "expected operands (...)" messages.
  std::string operand_signature() const;
};

const OpInfo& op_info(OpKind kind);
std::optional<OpKind> op_kind_from_name(std::string_view name);
std::span<const OpInfo> all_ops();

}  // namespace bertc::ir

namespace bertc::ir {

struct NamedAttr {
  std::string name;
  AttrValue value;
};

// The op's attribute values in schema order with defaults filled in. Throws ir::Error naming
// the op and attribute for an unknown, repeated, missing or mistyped attribute.
std::vector<AttrValue> complete_attrs(const OpInfo& info, std::span<const NamedAttr> given);
// "matmul has no attribute 'x' (it takes: transpose_a, transpose_b)".
std::string unknown_attr_message(const OpInfo& info, std::string_view name);

}  // namespace bertc::ir
