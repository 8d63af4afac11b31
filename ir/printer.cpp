// Writes a graph as IR text.
#include "ir/printer.h"

#include <sstream>

namespace bertc::ir {

std::vector<std::string> value_labels(const Graph& graph) {
  std::vector<std::string> labels(graph.num_values());
  size_t next = 0;
  for (const Op& op : graph.ops())
    for (ValueId r : op.results) {
      const std::string& name = graph.value(r).name;
      labels[r] = "%" + (name.empty() ? std::to_string(next++) : name);
    }
  return labels;
}

namespace {

std::string attrs_text(const Op& op) {
  std::vector<std::string> parts;
  const auto& specs = op.info().attrs;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].default_value && *specs[i].default_value == op.attrs[i]) continue;
    parts.push_back(fmt::format("{} = {}", specs[i].name, format_attr(op.attrs[i])));
  }
  return parts.empty() ? "" : fmt::format(" {{{}}}", fmt::join(parts, ", "));
}

void print_op(const Graph& g, const Op& op, const std::vector<std::string>& labels, std::ostream& out) {
  std::vector<std::string> results, operands, types;
  for (ValueId r : op.results) {
    results.push_back(labels[r]);
    types.push_back(to_string(g.value(r).type));
  }
  // A pass under construction may leave a dangling operand; print it rather than crash.
  for (ValueId v : op.operands) operands.push_back(v < labels.size() ? labels[v] : fmt::format("%<invalid {}>", v));
  // Sources print without parentheses: "%w = param : f32[2]"; effects without results or types:
  // "update(%w, %3)".
  const std::string args = operands.empty() ? "" : fmt::format("({})", fmt::join(operands, ", "));
  if (results.empty()) {
    out << fmt::format("  {}{}{}\n", op.info().name, args, attrs_text(op));
    return;
  }
  out << fmt::format("  {} = {}{}{} : {}\n", fmt::join(results, ", "), op.info().name, args, attrs_text(op),
                     fmt::join(types, ", "));
}

}  // namespace

void print(const Graph& graph, std::ostream& out) {
  const auto labels = value_labels(graph);
  out << "graph @" << graph.name() << " {\n";
  for (const Op& op : graph.ops()) print_op(graph, op, labels, out);
  std::vector<std::string> outs;
  for (ValueId v : graph.outputs()) outs.push_back(v < labels.size() ? labels[v] : fmt::format("%<invalid {}>", v));
  out << fmt::format("  return {}\n}}\n", fmt::join(outs, ", "));
}

std::string print(const Graph& graph) {
  std::ostringstream out;
  print(graph, out);
  return out.str();
}

}  // namespace bertc::ir
