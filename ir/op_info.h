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
#include "ir/enum_names.h"
#include "ir/kernel_family.h"
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

// How fusion treats an op, as TVM's op patterns do; Source, View and Effect launch no kernel.
enum class FusionPattern {
  Source,       // made before the step: input, param, state, constant
  View,         // the operand's bytes under another type: reshape
  Effect,       // an update after the step; no result
  Elementwise,  // each result element from the same element of each operand (NumPy broadcasting)
  Load,         // a layout op a pointwise loop reads through: slice, pad, permute, gather
  Row,          // reduces the last axis; anchors a row_reduction kernel
  Matmul,       // anchors a matmul kernel with its epilogue
  Reduce,       // reduces over axes; anchors a reduction kernel
  Optimizer,    // one parameter's update; all of them go into the multi-tensor kernels
  Opaque,       // a kernel of its own, never fused with others
};
BERTC_ENUM_NAMES(FusionPattern, {FusionPattern::Source, "source"}, {FusionPattern::View, "view"},
                 {FusionPattern::Effect, "effect"}, {FusionPattern::Elementwise, "elementwise"},
                 {FusionPattern::Load, "load"}, {FusionPattern::Row, "row"}, {FusionPattern::Matmul, "matmul"},
                 {FusionPattern::Reduce, "reduce"}, {FusionPattern::Optimizer, "optimizer"},
                 {FusionPattern::Opaque, "opaque"})

// The flags of ops.def's TRAITS column.
enum OpFlag : unsigned {
  NoFlags = 0,
  InPlace = 1u << 0,    // the result may overwrite an operand that dies there
  Recompute = 1u << 1,  // cheap to make again in the backward (no weight matmul, no cross-row reduction)
};

// Whether autodiff has the op's chain rule (ops.def's TRAITS column; passes/autodiff.cpp does not
// compile without a case for each Rule op, nor with one for a NoGradient op).
enum class Gradient { Rule, NoGradient };

struct OpTraits {
  FusionPattern pattern;
  KernelFamily family;  // renders the op as a kernel of its own (None: no kernel, or a fused op's attribute)
  unsigned flags;
  Gradient gradient;
  std::string_view kernel;  // an elementwise op's kernel expression over {0}, {1}, ... ("" : custom)
};

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
  OpTraits traits;
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

// The state an optimizer op (pattern Optimizer) keeps per param: the names of its operands between
// grad and lr, in order ("exp_avg", "exp_avg_sq" for adamw). Its results are the param's next
// value, then each state's. Throws ir::Error for an op of another pattern.
std::vector<std::string> optimizer_states(OpKind kind);
// Whether `name` is an optimizer state's value name, "<param>.<state>" for a state of any
// optimizer op of the table.
bool names_optimizer_state(std::string_view name);
std::optional<OpKind> op_kind_from_name(std::string_view name);
std::span<const OpInfo> all_ops();

// The questions every stage asks of an op kind, answered from its traits.
inline bool is_source(OpKind kind) { return op_info(kind).traits.pattern == FusionPattern::Source; }
// A view: its result is its operand's bytes under another type (no kernel, no memory of its own).
inline bool is_view(OpKind kind) { return op_info(kind).traits.pattern == FusionPattern::View; }
// Whether the op is a kernel launch (not a source, view or effect).
bool launches_kernel(OpKind kind);
inline bool may_run_in_place(OpKind kind) { return (op_info(kind).traits.flags & InPlace) != 0; }
inline bool cheap_to_recompute(OpKind kind) { return (op_info(kind).traits.flags & Recompute) != 0; }
inline bool has_gradient_rule(OpKind kind) { return op_info(kind).traits.gradient == Gradient::Rule; }

struct Op;
// The op's fusion pattern: its kind's, except that a gather along a batch dim (batch_dims > 0,
// the masked-LM positions) is Opaque: fused groups read tables only through unbatched gathers.
FusionPattern fusion_pattern(const Op& op);
// The family that renders a launching op: its kind's, or a fused op's `kernel` attribute.
KernelFamily kernel_family(const Op& op);

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
