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

void print_body(const Graph& g, std::ostream& out, const std::string& indent);

void print_op(const Graph& g, const Op& op, const std::vector<std::string>& labels, std::ostream& out,
              const std::string& indent) {
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
  out << indent;
  if (!results.empty()) out << fmt::format("{} = ", fmt::join(results, ", "));
  out << op.info().name << args << attrs_text(op);
  if (!results.empty()) out << fmt::format(" : {}", fmt::join(types, ", "));
  if (!op.scope.empty()) out << " loc(" << quote(op.scope) << ")";
  if (op.region) {
    out << " {\n";
    print_body(op.region.graph(), out, indent + "  ");
    out << indent << "}";
  }
  out << "\n";
}

// The ops and the return line of a graph or region.
void print_body(const Graph& g, std::ostream& out, const std::string& indent) {
  const auto labels = value_labels(g);
  for (const Op& op : g.ops()) print_op(g, op, labels, out, indent);
  std::vector<std::string> outs;
  for (ValueId v : g.outputs()) outs.push_back(v < labels.size() ? labels[v] : fmt::format("%<invalid {}>", v));
  out << fmt::format("{}return {}\n", indent, fmt::join(outs, ", "));
}

}  // namespace

void print(const Graph& graph, std::ostream& out) {
  out << "graph @" << graph.name() << " {\n";
  print_body(graph, out, "  ");
  out << "}\n";
}

std::string print(const Graph& graph) {
  std::ostringstream out;
  print(graph, out);
  return out.str();
}

}  // namespace bertc::ir
