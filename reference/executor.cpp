// Op-by-op evaluation with dispatch from ops.def, freeing each value after its last use.
#include "reference/executor.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "ir/float16.h"
#include "ir/out_of_memory.h"
#include "ir/printer.h"

namespace bertc::reference {
namespace {

// Rounds to the precision of a 16-bit float dtype (round to nearest even), so the reference sees
// what fp16/bf16 storage keeps.
float round_to(ir::DType dtype, float x) {
  return dtype == ir::DType::BF16 ? ir::from_bf16_bits(ir::bf16_bits(x)) : ir::from_f16_bits(ir::f16_bits(x));
}

template <typename T>
void round_storage(HostTensor<T>& t) {
  if (t.type.dtype != ir::DType::F16 && t.type.dtype != ir::DType::BF16) return;
  for (T& v : t.real) v = static_cast<T>(round_to(t.type.dtype, static_cast<float>(v)));
}

template <typename T>
void dispatch(OpEval<T>& e) {
  switch (e.op.kind) {
#define BERTC_OP(id, ...) \
  case ir::OpKind::id:    \
    return eval_##id(e);
#include "ir/ops.def"
#undef BERTC_OP
  }
}

}  // namespace

template <typename T>
Executor<T>::Executor(const ir::Graph& graph) : graph_(graph), last_use_(graph.num_values(), 0) {
  for (size_t i = 0; i < graph.ops().size(); ++i)
    for (ir::ValueId v : graph.ops()[i].operands) last_use_[v] = i;
  for (ir::ValueId v : graph.outputs()) last_use_[v] = std::numeric_limits<size_t>::max();
}

template <typename T>
RunResult<T> Executor<T>::run(Environment<T>& env, const std::vector<std::string>& fetch,
                              std::vector<HostTensor<T>>* all) const {
  return run_all(env, fetch, all, nullptr);
}

template <typename T>
RunResult<T> Executor<T>::run(Environment<T>& env, const std::vector<std::string>& fetch, const AfterOp& after_op) const {
  return run_all(env, fetch, nullptr, &after_op);
}

template <typename T>
RunResult<T> Executor<T>::run_all(Environment<T>& env, const std::vector<std::string>& fetch,
                                  std::vector<HostTensor<T>>* all, const AfterOp* after_op) const {
  std::vector<HostTensor<T>> values(graph_.num_values());
  std::vector<bool> keep(graph_.num_values(), false);
  for (const auto& name : fetch) {
    auto id = graph_.find(name);
    if (!id) throw EvalError(fmt::format("cannot fetch %{}: the graph has no value of that name", name));
    keep[*id] = true;
  }
  std::vector<std::pair<std::string, HostTensor<T>>> updates;
  std::vector<std::string> labels;  // made only if an error needs them
  size_t held = 0;  // bytes of the values kept so far: what an out-of-memory message reports
  auto bytes_of = [](const HostTensor<T>& t) { return t.real.size() * sizeof(T) + t.integer.size() * sizeof(int64_t); };
  for (size_t i = 0; i < graph_.ops().size(); ++i) {
    const ir::Op& op = graph_.ops()[i];
    auto who = [&] {
      if (labels.empty()) labels = ir::value_labels(graph_);
      return op.results.empty() ? std::string(op.info().name)
                                : fmt::format("{} = {}", labels[op.results[0]], op.info().name);
    };
    std::vector<HostTensor<T>> out;
    try {
      for (ir::ValueId r : op.results) out.push_back(HostTensor<T>::zeros(graph_.value(r).type));
      OpEval<T> e{graph_, op, {}, out, env, updates};
      for (ir::ValueId v : op.operands) e.in.push_back(&values[v]);
      dispatch(e);
    } catch (const ir::OutOfMemory&) {
      throw;  // from a fused op's region: it names the op already
    } catch (const std::bad_alloc&) {
      size_t bytes = 0;
      for (ir::ValueId r : op.results) bytes += static_cast<size_t>(graph_.value(r).type.numel()) * sizeof(T);
      throw ir::OutOfMemory("host", fmt::format("the results of op {} of the {} graph (the values kept so far hold {})",
                                                who(), graph_.name(), ir::readable_bytes(held)),
                            bytes);
    } catch (const std::exception& ex) {
      throw EvalError(fmt::format("op {}: {}", who(), ex.what()));
    }
    for (size_t r = 0; r < op.results.size(); ++r) {
      round_storage(out[r]);
      held += bytes_of(out[r]);
      values[op.results[r]] = std::move(out[r]);
    }
    for (ir::ValueId v : op.operands)
      if (last_use_[v] == i && !keep[v] && !all) {
        held -= std::min(held, bytes_of(values[v]));
        values[v] = HostTensor<T>{};  // free early: activations are large
      }
    if (after_op) (*after_op)(i, values);
  }
  RunResult<T> result;
  for (ir::ValueId v : graph_.outputs()) result.outputs.push_back(values[v]);
  for (const auto& name : fetch) result.fetched[name] = values[*graph_.find(name)];
  for (auto& [name, tensor] : updates) env[name] = std::move(tensor);
  if (all) *all = std::move(values);
  return result;
}

// A fused op runs its region: region inputs bound in order to the operands.
template <typename T>
void eval_Fused(OpEval<T>& e) {
  const ir::Graph& body = e.op.region.graph();
  Environment<T> env;
  const auto inputs = body.values_of(ir::OpKind::Input);
  for (size_t i = 0; i < inputs.size(); ++i) env[body.value(inputs[i]).name] = *e.in[i];
  auto result = Executor<T>(body).run(env);
  for (size_t i = 0; i < e.out.size(); ++i) e.out[i] = std::move(result.outputs[i]);
}

template class Executor<float>;
template class Executor<double>;
BERTC_INSTANTIATE_EVAL(eval_Fused)

}  // namespace bertc::reference
