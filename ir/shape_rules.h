// Shape and dtype rules: one function per rule named in ops.def, checking an op's operands and
// attributes and giving its result types, with messages of the form "expected X, found Y".
#pragma once

#include <span>
#include <string>
#include <variant>
#include <vector>

#include "ir/error.h"
#include "ir/op_info.h"

namespace bertc::ir {

// A rule's complaint; operand is the offending operand's index, or -1 for the op as a whole.
class InferError : public Error {
 public:
  InferError(int operand, const std::string& message) : Error(message), operand_(operand) {}
  int operand() const { return operand_; }

 private:
  int operand_;
};

// What a rule sees of one op: operand types, attribute values (complete, in schema order) and,
// for Declared ops, the declared result types.
class InferContext {
 public:
  InferContext(const OpInfo& info, std::span<const TensorType> operands,
               std::span<const AttrValue> attrs, std::span<const TensorType> declared)
      : info_(info), operands_(operands), attrs_(attrs), declared_(declared) {}

  const OpInfo& info() const { return info_; }
  size_t num_operands() const { return operands_.size(); }
  const TensorType& operand(size_t i) const { return operands_[i]; }
  std::span<const TensorType> operands() const { return operands_; }
  // The one declared result type of a Declared op.
  const TensorType& declared() const;
  // All declared result types (fused ops declare several).
  std::span<const TensorType> declared_types() const { return declared_; }

  template <typename T>
  const T& attr(std::string_view name) const {
    return std::get<T>(attrs_[*info_.attr_index(name)]);
  }

  [[noreturn]] void fail(const std::string& message) const { throw InferError(-1, message); }
  [[noreturn]] void fail_operand(size_t i, const std::string& message) const {
    throw InferError(static_cast<int>(i), message);
  }
  // Fails unless operand i has a floating-point dtype.
  void require_float(size_t i) const;

 private:
  const OpInfo& info_;
  std::span<const TensorType> operands_;
  std::span<const AttrValue> attrs_;
  std::span<const TensorType> declared_;
};

// Runs the op's rule; throws InferError. `declared` is empty for Inferred ops.
std::vector<TensorType> infer_result_types(OpKind kind, std::span<const TensorType> operands,
                                           std::span<const AttrValue> attrs,
                                           std::span<const TensorType> declared);

// "operand 1 'rhs' (%w : f32[512,768]): expected ..." or the op-level message as is.
std::string explain_infer_error(const InferError& e, const OpInfo& info, std::span<const std::string> operand_labels,
                                std::span<const TensorType> operand_types);

namespace rules {
#define BERTC_OP(id, text, rule, ...) std::vector<TensorType> rule(const InferContext& c);
#include "ir/ops.def"
#undef BERTC_OP
}  // namespace rules

}  // namespace bertc::ir
