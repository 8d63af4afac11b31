// The C++ DSL: a graph builder with typed helpers, so a model is a plain C++ function.
//
//   Builder b("tiny");
//   Tensor x = b.input("x", DType::F32, {8, 128});
//   Tensor w = b.param("dense.weight", {64, 128});
//   Tensor y = gelu(b.matmul(x, w, false, true));
//   b.output(y, "y");
//   ir::Graph g = std::move(b).finish();
//
// Every op is checked by its shape rule as it is created, so a mistake in a model definition
// stops at the line that made it, with the op, the operand and expected vs found.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace bertc::ir {

class Builder;

// A handle on one value under construction; cheap to copy.
class Tensor {
 public:
  Tensor() = default;
  Tensor(Builder* builder, ir::ValueId id) : builder_(builder), id_(id) {}

  ir::ValueId id() const { return id_; }
  Builder& builder() const { return *builder_; }
  // By value: the graph's storage moves as ops are added, so a reference would dangle.
  ir::TensorType type() const;
  Shape shape() const { return type().shape; }
  DType dtype() const { return type().dtype; }
  int64_t rank() const { return type().rank(); }
  int64_t dim(int64_t axis) const;  // negative counts from the end

 private:
  Builder* builder_ = nullptr;
  ir::ValueId id_ = 0;
};

class Builder {
 public:
  explicit Builder(std::string graph_name) : graph_(std::move(graph_name)) {}
  // Continues an existing graph (passes use this to append ops): new dropouts share its
  // dropout_seed input and take offsets after its largest.
  explicit Builder(ir::Graph graph);

  // A handle on a value already in the graph.
  Tensor value(ir::ValueId id) { return Tensor(this, id); }

  const ir::Graph& graph() const { return graph_; }
  // Verifies and hands over the graph; the builder is spent.
  ir::Graph finish() &&;

  // Sources. Parameter names get the current scope as prefix ("bert.encoder.layer.0." + name).
  Tensor input(const std::string& name, DType dtype, Shape shape);
  Tensor param(std::string_view name, Shape shape, DType dtype = DType::F32);
  Tensor constant(double value, DType dtype = DType::F32);

  // Any op from ops.def, returning all its results (none for an effect, three for adamw);
  // `declared` is the result type of Declared ops (reshape, cast, ...).
  std::vector<Tensor> ops(ir::OpKind kind, const std::vector<Tensor>& operands, std::vector<ir::NamedAttr> attrs = {},
                          std::optional<ir::TensorType> declared = std::nullopt);
  // Appends a copy of `op` from another graph reading `operands`: its attributes, scope and region
  // are kept; `result_types` are its results' types (checked like any op's). For passes.
  std::vector<Tensor> copy_op(const ir::Op& op, const std::vector<Tensor>& operands,
                              const std::vector<ir::TensorType>& result_types);
  // The same for an op with exactly one result.
  Tensor op(ir::OpKind kind, const std::vector<Tensor>& operands, std::vector<ir::NamedAttr> attrs = {},
            std::optional<ir::TensorType> declared = std::nullopt);

  // A persistent, untrained value (optimizer moment, gradient accumulator), named as given, whose
  // elements start at `init`.
  Tensor state(const std::string& name, ir::TensorType type, double init = 0.0);
  // After the step, `target` (a param or state) holds `value`.
  void update(Tensor target, Tensor value);

  Tensor matmul(Tensor a, Tensor b, bool transpose_a = false, bool transpose_b = false);
  Tensor reduce_sum(Tensor x, std::vector<int64_t> axes, bool keepdim = false);
  Tensor reduce_max(Tensor x, std::vector<int64_t> axes, bool keepdim = false);
  Tensor reduce_mean(Tensor x, std::vector<int64_t> axes, bool keepdim = false);
  Tensor reshape(Tensor x, Shape shape);
  Tensor permute(Tensor x, std::vector<int64_t> perm);
  Tensor broadcast(Tensor x, Shape shape);
  Tensor slice(Tensor x, int64_t axis, int64_t start, int64_t end);
  Tensor concat(const std::vector<Tensor>& xs, int64_t axis);
  // padding_idx: the row that receives no gradient (-1: none), as nn.Embedding's padding_idx.
  Tensor gather(Tensor table, Tensor indices, int64_t batch_dims = 0, int64_t padding_idx = -1);
  Tensor cast(Tensor x, DType to);
  Tensor softmax(Tensor x);
  Tensor layer_norm(Tensor x, Tensor weight, Tensor bias, double eps);
  // p == 0 returns x unchanged. Each dropout gets its own Philox offset; all share one seed input.
  Tensor dropout(Tensor x, double p);
  Tensor cross_entropy(Tensor logits, Tensor labels, std::optional<Tensor> weights = std::nullopt,
                       int64_t ignore_index = -100);

  // Names a value (shown in IR dumps) and returns it.
  Tensor name(Tensor x, const std::string& name);
  // Marks a graph output under a name.
  void output(Tensor x, const std::string& name);
  // Marks a graph output, keeping whatever name it has.
  void add_output(Tensor x) { graph_.add_output(x.id()); }

  // RAII name scope for parameters: { auto s = b.scope("attention"); b.param("self.query.weight", ...); }
  class [[nodiscard]] Scope {
   public:
    explicit Scope(Builder& b) : b_(&b) {}
    Scope(Scope&& other) noexcept : b_(other.b_) { other.b_ = nullptr; }
    Scope(const Scope&) = delete;
    ~Scope() {
      if (b_) b_->scopes_.pop_back();
    }

   private:
    Builder* b_;
  };
  Scope scope(std::string_view part);
  std::string scoped_name(std::string_view name) const;

  // Ops record where they come from (Op::scope): the name scopes joined by ".", or, while an
  // OpScope is alive, the scope it names (passes use it: "backward/...", "recompute/...").
  class [[nodiscard]] OpScope {
   public:
    OpScope(Builder& b, std::string scope) : b_(&b), saved_(std::exchange(b.op_scope_, std::move(scope))) {}
    OpScope(const OpScope&) = delete;
    ~OpScope() { b_->op_scope_ = std::move(saved_); }

   private:
    Builder* b_;
    std::optional<std::string> saved_;
  };

 private:
  int64_t normalize_axis(const Tensor& x, int64_t axis) const;
  Tensor source(ir::OpKind kind, const std::string& name, ir::TensorType type);

  ir::Graph graph_;
  std::vector<std::string> scopes_;
  std::optional<Tensor> dropout_seed_;
  std::optional<std::string> op_scope_;
  int64_t next_dropout_offset_ = 0;
};

// Elementwise math. Scalars become rank-0 constants of the tensor's dtype.
Tensor operator+(Tensor a, Tensor b);
Tensor operator-(Tensor a, Tensor b);
Tensor operator*(Tensor a, Tensor b);
Tensor operator/(Tensor a, Tensor b);
Tensor operator+(Tensor a, double s);
Tensor operator-(double s, Tensor a);
Tensor operator*(Tensor a, double s);
Tensor operator-(Tensor a);
Tensor exp(Tensor x);
Tensor expm1(Tensor x);
Tensor log(Tensor x);
Tensor sqrt(Tensor x);
Tensor rsqrt(Tensor x);
Tensor tanh(Tensor x);
Tensor gelu(Tensor x);
Tensor relu(Tensor x);
Tensor leaky_relu(Tensor x, double slope = 0.01);

}  // namespace bertc::ir
