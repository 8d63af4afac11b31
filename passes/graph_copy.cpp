// Op-by-op graph copying with value remapping.
#include "passes/graph_copy.h"

#include <fmt/format.h>

namespace bertc::passes {

ir::Tensor GraphCopy::operator[](ir::ValueId v) const {
  const auto it = map_.find(v);
  if (it == map_.end()) throw ir::Error(fmt::format("graph copy: value {} is used before its op was copied", v));
  return it->second;
}

std::vector<ir::Tensor> GraphCopy::operands(const ir::Op& op) const {
  std::vector<ir::Tensor> out;
  for (ir::ValueId v : op.operands) out.push_back((*this)[v]);
  return out;
}

void GraphCopy::copy(const ir::Op& op, bool keep_names) {
  std::vector<ir::TensorType> types;
  for (ir::ValueId r : op.results) types.push_back(from_.value(r).type);
  const auto results = to_.copy_op(op, operands(op), types);
  for (size_t i = 0; i < results.size(); ++i) {
    const std::string& name = from_.value(op.results[i]).name;
    if (keep_names && !name.empty()) to_.name(results[i], name);
    map_.insert_or_assign(op.results[i], results[i]);
  }
}

void GraphCopy::copy_outputs() {
  for (ir::ValueId v : from_.outputs()) {
    const std::string& name = from_.value(v).name;
    if (name.empty()) to_.add_output((*this)[v]);
    else to_.output((*this)[v], name);
  }
}

}  // namespace bertc::passes
