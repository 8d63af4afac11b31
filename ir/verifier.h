// Graph verification: SSA order, operand counts, attributes, and every op's shape/dtype rule.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace bertc::ir {

struct Diagnostic {
  SourceLoc loc;        // the op's place in IR text, if it came from text
  std::string message;  // names the op, the operand, and expected vs found
};

// All problems found, in op order; empty when the graph is well formed.
std::vector<Diagnostic> verify(const Graph& graph);

// Thrown by verify_or_throw; what() is the first diagnostic.
class VerifyError : public Error {
 public:
  explicit VerifyError(std::vector<Diagnostic> diagnostics);
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }

 private:
  std::vector<Diagnostic> diagnostics_;
};

void verify_or_throw(const Graph& graph);

}  // namespace bertc::ir
