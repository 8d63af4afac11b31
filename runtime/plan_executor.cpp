// Running a compiled plan on a Device (see plan_executor.h).
#include "runtime/plan_executor.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/tensor_io.h"

namespace bertc::runtime {

using codegen::KernelSpec;
using codegen::ParamKind;

PlanExecutor::PlanExecutor(const ir::Graph& graph, codegen::GraphKernels kernels, Device& device)
    : graph_(graph), kernels_(std::move(kernels)), device_(device), layout_(graph) {
  // Updates are read back after the last launch: that is right only if no launch comes after one
  // (the schedule puts them last), since the arena may reuse a next value's bytes after its update.
  size_t first_update = graph.ops().size();
  for (size_t i = 0; i < graph.ops().size(); ++i)
    if (graph.ops()[i].kind == ir::OpKind::Update) first_update = std::min(first_update, i);
  for (const KernelSpec& k : kernels_.kernels)
    if (k.op_index > first_update)
      throw std::logic_error(fmt::format("launch of op {} comes after the update at op {}", k.op_index, first_update));

  std::vector<const KernelSpec*> all;
  size_t workspace = 0;
  for (const KernelSpec& k : kernels_.kernels) {
    all.push_back(&k);
    for (const codegen::KernelParam& p : k.params)
      if (p.kind == ParamKind::Workspace) workspace = std::max(workspace, p.scratch_bytes);
  }
  device_.load(all);
  arena_ = device_.allocate(static_cast<size_t>(std::max<int64_t>(layout_.plan().arena_bytes, 1)));
  if (workspace > 0) workspace_ = device_.allocate(workspace);
  own_.assign(graph.num_values(), nullptr);
  for (ir::ValueId v : layout_.owned()) own_[v] = device_.allocate(static_cast<size_t>(std::max<int64_t>(graph.value(v).type.bytes(), 1)));
  scratch_.assign(kernels_.kernels.size(), nullptr);
  tables_.resize(kernels_.kernels.size());
  for (size_t i = 0; i < kernels_.kernels.size(); ++i)
    for (const codegen::KernelParam& p : kernels_.kernels[i].params) {
      if (p.kind == ParamKind::Scratch) {
        scratch_[i] = device_.allocate(p.scratch_bytes);
        device_.fill(scratch_[i], 0, p.scratch_bytes);  // zeroed once; every launch leaves it zeroed
      }
      if (p.kind == ParamKind::Table) {  // the buffers' addresses never change: upload them once
        std::vector<void*> entries;
        for (ir::ValueId v : p.table) entries.push_back(address(v));
        void* table = device_.allocate(entries.size() * sizeof(void*));
        device_.upload(table, entries.data(), entries.size() * sizeof(void*));
        tables_[i].push_back(table);
      }
    }
}

void* PlanExecutor::address(ir::ValueId v) {
  const ValuePlace p = layout_.place(v);
  return p.kind == ValuePlace::Arena ? static_cast<unsigned char*>(arena_) + p.offset : own_[p.owner];
}

reference::HostTensor<float> PlanExecutor::read(ir::ValueId v) {
  const ir::TensorType& t = graph_.value(v).type;
  StoredTensor s{t.dtype, t.shape, std::vector<uint8_t>(static_cast<size_t>(t.bytes()))};
  device_.download(s.bytes.data(), address(v), s.bytes.size());
  return to_host(s, t.dtype, graph_.value(v).name);
}

void PlanExecutor::launch(size_t index) {
  const KernelSpec& k = kernels_.kernels[index];
  std::vector<void*> values;  // what each argument slot points at
  size_t table = 0;
  for (const codegen::KernelParam& p : k.params) {
    switch (p.kind) {
      case ParamKind::Buffer: values.push_back(address(p.value)); break;
      case ParamKind::Table: values.push_back(tables_[index].at(table++)); break;
      case ParamKind::Scratch: values.push_back(scratch_[index]); break;
      case ParamKind::Workspace: values.push_back(workspace_); break;
    }
  }
  std::vector<void*> args;  // kernel arguments are passed by address
  for (void*& v : values) args.push_back(&v);
  for (ir::ValueId v : k.zero_before) device_.fill(address(v), 0, static_cast<size_t>(graph_.value(v).type.bytes()));
  if (const auto& g = k.library)
    device_.gemm(codegen::cublas_args(*g), address(g->b), address(g->a), g->to_workspace ? workspace_ : address(g->c));
  if (!k.source.empty()) device_.launch(k, args.data());
}

std::vector<reference::HostTensor<float>> PlanExecutor::run(reference::Environment<float>& env) {
  for (ir::ValueId v : layout_.owned()) {
    const ir::Op& op = graph_.producer(v);
    const ir::Value& value = graph_.value(v);
    reference::HostTensor<float> t = reference::HostTensor<float>::zeros(value.type);
    if (op.kind == ir::OpKind::Constant) {
      std::fill(t.real.begin(), t.real.end(), static_cast<float>(op.attr<double>("value")));
    } else {
      const auto it = env.find(value.name);
      if (it == env.end()) throw std::runtime_error(fmt::format("no value for {} '{}'", op.info().name, value.name));
      if (it->second.type != value.type)
        throw std::runtime_error(fmt::format("'{}' is {}, the program expects {}", value.name, ir::to_string(it->second.type),
                                             ir::to_string(value.type)));
      t = it->second;
    }
    const StoredTensor s = to_storage(t);
    device_.upload(own_[v], s.bytes.data(), s.bytes.size());
  }
  for (size_t i = 0; i < kernels_.kernels.size(); ++i) {
    try {
      launch(i);
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("launch {} ({} {}, op {}): {}", i, kernels_.kernels[i].family,
                                           kernels_.kernels[i].label, kernels_.kernels[i].op_index, e.what()));
    }
  }
  device_.synchronize();
  std::vector<reference::HostTensor<float>> outputs;
  for (ir::ValueId v : graph_.outputs()) outputs.push_back(read(v));
  for (const ir::Op& op : graph_.ops())
    if (op.kind == ir::OpKind::Update) env[graph_.value(op.operands[0]).name] = read(op.operands[1]);
  return outputs;
}

}  // namespace bertc::runtime
