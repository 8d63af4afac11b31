// Scalar C++ for the values of a region at symbolic coordinates: how every kernel family inlines a
// fused group's pointwise ops, loads and index transformations (broadcast, slice, pad, permute,
// concat, gather, reshape) into its own loop structure.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace bertc::codegen {

// One C++ expression of type bx_i64 per axis.
using Coords = std::vector<std::string>;

// The C++ storage type of a dtype in kernels ("float", "bx_f16", "int", ...).
std::string storage_type(ir::DType dtype);
// A literal C++ float ("0.100000001f") or integer.
std::string float_literal(double value);

// A dropout offset in a kernel's source: render_graph makes each distinct one an Integer parameter
// (`offset0`, ...), so that layers whose kernels differ only by it share one kernel.
std::string dropout_offset(int64_t offset);

class Emitter {
 public:
  // `inputs[i]` names the parameter that holds region input i (the i-th input op of `body`).
  Emitter(const ir::Graph& body, std::vector<std::string> inputs);

  // An expression (a local of type float, or bx_i64 for integer dtypes) holding value `v` of the
  // body at `at`, emitting the statements it needs at the current position; computed once per
  // scope. Throws ir::Error for ops that are not elementwise (rows, reductions, matmuls).
  std::string at(ir::ValueId v, const Coords& at);
  // Makes `expr` the value of `v` at `at` in the current scope: families bind what they compute
  // themselves (a row op's result, a reduction's total).
  void bind(ir::ValueId v, const Coords& at, std::string expr);

  // Statements: `line` appends one; `open` appends a line ending in "{" and opens a scope whose
  // values are forgotten at `close`.
  void line(std::string_view statement);
  void open(std::string_view head);
  void close();
  // A fresh local `type name = expr;`; returns the name.
  std::string local(std::string_view type, std::string_view expr);
  std::string fresh(std::string_view prefix);

  std::string take();  // the code so far (and forget it)

  // Flat mode: every value of `n` elements is addressed by the linear index `index` alone (and
  // values of one element by 0), so the code does not depend on shapes. Only elementwise ops and
  // reshapes are allowed then: what multi-tensor kernels share across tensors of any shape.
  void flat(int64_t n, std::string index);

  const ir::Graph& body() const { return body_; }
  bool is_integer(ir::ValueId v) const;

  // Row-major linear index of `at` in `shape`.
  static std::string linear(const ir::Shape& shape, const Coords& at);
  // The coordinates of linear index `index` in `shape` (declares locals for them).
  Coords decompose(const ir::Shape& shape, std::string_view index);

 private:
  std::string compute(const ir::Op& op, ir::ValueId v, const Coords& at);
  std::string load_input(size_t input, const Coords& at);
  std::string pointwise(const ir::Op& op, const Coords& at);
  std::string operand_at(const ir::Op& op, size_t i, const Coords& at);  // broadcast to op's result
  std::string padded(const ir::Op& op, const Coords& at);
  std::string concatenated(const ir::Op& op, const Coords& at);
  std::string gathered(const ir::Op& op, const Coords& at);
  std::string rounded(ir::DType dtype, std::string expr) const;
  std::string element_index(const ir::TensorType& type, const Coords& at) const;

  const ir::Graph& body_;
  std::vector<std::string> inputs_;
  std::vector<int> input_index_;  // per value: which region input it is, or -1
  std::vector<std::map<std::string, std::string>> scopes_;
  std::string code_;
  int indent_ = 1;
  int counter_ = 0;
  int64_t flat_n_ = -1;
  std::string flat_index_;
};

}  // namespace bertc::codegen
