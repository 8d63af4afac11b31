// Checks a graph op by op and words each problem so a person can fix it.
#include "ir/verifier.h"

#include <set>

#include "ir/printer.h"
#include "ir/shape_rules.h"

namespace bertc::ir {
namespace {

class Verifier {
 public:
  explicit Verifier(const Graph& g) : g_(g), labels_(value_labels(g)), defined_(g.num_values(), false) {}

  std::vector<Diagnostic> run() {
    bool has_effects = false;
    for (const Op& op : g_.ops()) {
      check_op(op);
      if (op.kind == OpKind::Update) {
        has_effects = true;
        check_update(op);
      }
    }
    if (g_.outputs().empty() && !has_effects)
      diags_.push_back({{}, "graph has no outputs and no updates, so it computes nothing: expected 'return %value'"});
    for (ValueId v : g_.outputs())
      if (v >= defined_.size() || !defined_[v]) diags_.push_back({{}, "return uses a value that no op defines"});
    return std::move(diags_);
  }

 private:
  std::string op_label(const Op& op) const {
    std::vector<std::string> results;
    for (ValueId r : op.results) results.push_back(labels_[r]);
    if (results.empty()) return std::string(op.info().name);
    return fmt::format("{} = {}", fmt::join(results, ", "), op.info().name);
  }

  void report(const Op& op, const std::string& message) {
    diags_.push_back({op.loc, fmt::format("op {}: {}", op_label(op), message)});
  }

  bool check_operands(const Op& op) {
    const OpInfo& info = op.info();
    const size_t n = op.operands.size();
    if (n < info.min_operands() || n > info.max_operands()) {
      report(op, fmt::format("expected operands ({}), found {}", info.operand_signature(), n));
      return false;
    }
    for (size_t i = 0; i < n; ++i) {
      const ValueId v = op.operands[i];
      if (v >= defined_.size() || !defined_[v]) {
        report(op, fmt::format("operand {} '{}' is used before it is defined", i, info.operand_name(i)));
        return false;
      }
    }
    return true;
  }

  bool check_attrs(const Op& op) {
    const auto& specs = op.info().attrs;
    if (op.attrs.size() != specs.size()) {
      report(op, fmt::format("has {} attribute values, its schema {}", op.attrs.size(), specs.size()));
      return false;
    }
    for (size_t i = 0; i < specs.size(); ++i)
      if (kind_of(op.attrs[i]) != specs[i].kind) {
        report(op, fmt::format("attribute '{}' expects a {}, found {}", specs[i].name, attr_kind_name(specs[i].kind),
                               format_attr(op.attrs[i])));
        return false;
      }
    return true;
  }

  void check_types(const Op& op) {
    std::vector<TensorType> operand_types, result_types;
    for (ValueId v : op.operands) operand_types.push_back(g_.value(v).type);
    for (ValueId r : op.results) result_types.push_back(g_.value(r).type);
    const bool declared = op.info().result_types == ResultTypes::Declared;
    std::vector<TensorType> inferred;
    try {
      inferred = infer_result_types(op.kind, operand_types, op.attrs,
                                    declared ? std::span<const TensorType>(result_types) : std::span<const TensorType>{});
    } catch (const InferError& e) {
      std::vector<std::string> operand_labels;
      for (ValueId v : op.operands) operand_labels.push_back(labels_[v]);
      return report(op, explain_infer_error(e, op.info(), operand_labels, operand_types));
    }
    if (inferred.size() != result_types.size())
      return report(op, fmt::format("expected {} results, found {}", inferred.size(), result_types.size()));
    for (size_t i = 0; i < inferred.size(); ++i)
      if (inferred[i] != result_types[i])
        report(op, fmt::format("result {} has type {}, expected {} from its operands", labels_[op.results[i]],
                               to_string(result_types[i]), to_string(inferred[i])));
  }

  // An update writes a persistent value (param or state), and each one at most once a step.
  void check_update(const Op& op) {
    if (op.operands.empty() || op.operands[0] >= defined_.size()) return;  // reported already
    const ValueId target = op.operands[0];
    const OpKind source = g_.producer(target).kind;
    if (source != OpKind::Param && source != OpKind::State)
      return report(op, fmt::format("target {} is not a param or state, so it has nothing to update",
                                    labels_[target]));
    if (!updated_.insert(target).second) report(op, fmt::format("{} is updated twice in one step", labels_[target]));
  }

  // A fused op's region: a well-formed, pure graph whose inputs and outputs match the op's
  // operands and results one for one.
  void check_region(const Op& op) {
    if (!op.region) return report(op, "has no region: a fused op needs the graph of its kernel");
    try {
      kernel_family(op);
    } catch (const Error& e) {
      return report(op, e.what());
    }
    const Graph& body = op.region.graph();
    for (const Diagnostic& d : verify(body)) diags_.push_back({d.loc, fmt::format("in the region of {}: {}", op_label(op), d.message)});
    std::vector<ValueId> inputs;
    for (const Op& inner : body.ops()) {
      if (inner.kind == OpKind::Input) {
        inputs.push_back(inner.result());
        if (body.value(inner.result()).name.empty())
          return report(op, "a region input needs a name (%in0 = input : ...): operands bind to inputs by it");
      }
      if (inner.kind == OpKind::Param || inner.kind == OpKind::State || inner.kind == OpKind::Update)
        return report(op, fmt::format("its region holds a {} op; a region only computes (params enter as operands)",
                                      inner.info().name));
    }
    if (inputs.size() != op.operands.size())
      return report(op, fmt::format("has {} operands but its region {} inputs", op.operands.size(), inputs.size()));
    for (size_t i = 0; i < inputs.size(); ++i)
      if (op.operands[i] < defined_.size() && body.value(inputs[i]).type != g_.value(op.operands[i]).type)
        report(op, fmt::format("operand {} is {}, but region input %{} is {}", i, to_string(g_.value(op.operands[i]).type),
                               body.value(inputs[i]).name, to_string(body.value(inputs[i]).type)));
    if (body.outputs().size() != op.results.size())
      return report(op, fmt::format("has {} results but its region returns {}", op.results.size(), body.outputs().size()));
    for (size_t i = 0; i < op.results.size(); ++i)
      if (body.outputs()[i] < body.num_values() && body.value(body.outputs()[i]).type != g_.value(op.results[i]).type)
        report(op, fmt::format("result {} is {}, but the region returns {}", i, to_string(g_.value(op.results[i]).type),
                               to_string(body.value(body.outputs()[i]).type)));
  }

  void check_op(const Op& op) {
    if (op.kind == OpKind::Fused) check_region(op);
    else if (op.region) report(op, "only a fused op may have a region");
    if (check_operands(op) && check_attrs(op)) check_types(op);
    for (ValueId r : op.results) defined_[r] = true;
  }

  const Graph& g_;
  std::vector<std::string> labels_;
  std::vector<bool> defined_;
  std::vector<Diagnostic> diags_;
  std::set<ValueId> updated_;
};

}  // namespace

std::vector<Diagnostic> verify(const Graph& graph) { return Verifier(graph).run(); }

VerifyError::VerifyError(std::vector<Diagnostic> diagnostics)
    : Error(diagnostics.empty() ? "verification failed" : diagnostics.front().message,
            diagnostics.empty() ? SourceLoc{} : diagnostics.front().loc),
      diagnostics_(std::move(diagnostics)) {}

void verify_or_throw(const Graph& graph) {
  auto diags = verify(graph);
  if (!diags.empty()) throw VerifyError(std::move(diags));
}

std::string format_diagnostic(const std::string& file, SourceLoc loc, const std::string& message) {
  if (loc.known()) return fmt::format("{}:{}:{}: error: {}", file, loc.line, loc.column, message);
  return fmt::format("{}: error: {}", file, message);
}

}  // namespace bertc::ir
