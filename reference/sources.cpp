// Sources (inputs, params, states, constants) and the update effect.
#include <fmt/format.h>

#include "reference/kernels.h"

namespace bertc::reference {
namespace {

template <typename T>
void load(OpEval<T>& e, std::string_view what) {
  const ir::Value& v = e.graph.value(e.op.result());
  auto it = e.env.find(v.name);
  if (it == e.env.end())
    throw EvalError(fmt::format("no value given for {} %{} ({})", what, v.name, to_string(v.type)));
  if (it->second.type != v.type)
    throw EvalError(fmt::format("{} %{} is {}, but the value given is {}", what, v.name, to_string(v.type),
                                to_string(it->second.type)));
  e.out[0] = it->second;
}

}  // namespace

template <typename T>
void eval_Input(OpEval<T>& e) { load(e, "input"); }
template <typename T>
void eval_Param(OpEval<T>& e) { load(e, "param"); }
template <typename T>
void eval_State(OpEval<T>& e) { load(e, "state"); }

template <typename T>
void eval_Constant(OpEval<T>& e) {
  const double value = e.template attr<double>("value");
  HostTensor<T>& out = e.out[0];
  if (out.is_real()) std::fill(out.real.begin(), out.real.end(), static_cast<T>(value));
  else std::fill(out.integer.begin(), out.integer.end(), static_cast<int64_t>(value));
}

template <typename T>
void eval_Update(OpEval<T>& e) {
  e.updates.emplace_back(e.graph.value(e.op.operands[0]).name, *e.in[1]);
}

BERTC_INSTANTIATE_EVAL(eval_Input)
BERTC_INSTANTIATE_EVAL(eval_Param)
BERTC_INSTANTIATE_EVAL(eval_State)
BERTC_INSTANTIATE_EVAL(eval_Constant)
BERTC_INSTANTIATE_EVAL(eval_Update)

}  // namespace bertc::reference
