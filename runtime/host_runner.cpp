// The Host device's plan execution (see host_runner.h).
#include "runtime/host_runner.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/tensor_io.h"

namespace bertc::runtime {
namespace {

using codegen::KernelSpec;
using codegen::ParamKind;

constexpr size_t kAlign = 256;  // as the arena's buffers (passes::kArenaAlignment)

unsigned char* aligned(std::vector<unsigned char>& bytes) {
  auto p = reinterpret_cast<uintptr_t>(bytes.data());
  return bytes.data() + (kAlign - p % kAlign) % kAlign;
}

}  // namespace

HostRunner::HostRunner(const ir::Graph& graph, codegen::GraphKernels kernels, const std::filesystem::path& cache)
    : graph_(graph), kernels_(std::move(kernels)), layout_(graph) {
  std::vector<const KernelSpec*> all;
  size_t workspace = 0;
  for (const KernelSpec& k : kernels_.kernels) {
    all.push_back(&k);
    for (const codegen::KernelParam& p : k.params)
      if (p.kind == ParamKind::Workspace) workspace = std::max(workspace, p.scratch_bytes);
  }
  library_ = std::make_unique<codegen::HostKernelLibrary>(codegen::compile_for_host(codegen::host_source(all), cache, emulator_.api()));
  arena_.assign(static_cast<size_t>(layout_.plan().arena_bytes) + kAlign, 0xff);  // poisoned: NaN floats
  own_.resize(graph.num_values());
  for (ir::ValueId v : layout_.owned()) own_[v].assign(static_cast<size_t>(graph.value(v).type.bytes()) + kAlign, 0);
  scratch_.resize(kernels_.kernels.size());
  for (size_t i = 0; i < kernels_.kernels.size(); ++i)
    for (const codegen::KernelParam& p : kernels_.kernels[i].params)
      if (p.kind == ParamKind::Scratch) scratch_[i].assign(p.scratch_bytes + kAlign, 0);
  workspace_.assign(workspace / 4, 0.0f);
  // Updates are read back after the last launch: that is right only if no launch comes after one
  // (the schedule puts them last), since the arena may reuse a next value's bytes after its update.
  size_t first_update = graph.ops().size();
  for (size_t i = 0; i < graph.ops().size(); ++i)
    if (graph.ops()[i].kind == ir::OpKind::Update) first_update = std::min(first_update, i);
  for (const KernelSpec& k : kernels_.kernels)
    if (k.op_index > first_update)
      throw std::logic_error(fmt::format("launch of op {} comes after the update at op {}", k.op_index, first_update));
}

HostRunner::~HostRunner() = default;

unsigned char* HostRunner::address(ir::ValueId v) {
  const ValuePlace p = layout_.place(v);
  return p.kind == ValuePlace::Arena ? aligned(arena_) + p.offset : aligned(own_[p.owner]);
}

HostTensor HostRunner::read(ir::ValueId v) {
  const ir::TensorType& t = graph_.value(v).type;
  StoredTensor s{t.dtype, t.shape, std::vector<uint8_t>(static_cast<size_t>(t.bytes()))};
  std::memcpy(s.bytes.data(), address(v), s.bytes.size());
  return to_host(s, t.dtype, graph_.value(v).name);
}

void HostRunner::launch(const KernelSpec& k, size_t index, codegen::ThreadOrder order) {
  std::vector<void*> args;
  std::vector<std::vector<void*>> tables;
  tables.reserve(k.params.size());
  for (const codegen::KernelParam& p : k.params) {
    switch (p.kind) {
      case ParamKind::Buffer: args.push_back(address(p.value)); break;
      case ParamKind::Table:
        tables.emplace_back();
        for (ir::ValueId v : p.table) tables.back().push_back(address(v));
        args.push_back(tables.back().data());
        break;
      case ParamKind::Scratch: args.push_back(aligned(scratch_[index])); break;
      case ParamKind::Workspace: args.push_back(workspace_.data()); break;
    }
  }
  for (ir::ValueId v : k.zero_before) std::memset(address(v), 0, static_cast<size_t>(graph_.value(v).type.bytes()));
  if (const auto& g = k.library) {  // cuBLAS's part, on the host, as its arguments define it
    const HostTensor a = read(g->a), b = read(g->b);
    std::vector<float> c(static_cast<size_t>(g->batch * g->m * g->n));
    codegen::run_cublas_on_host(codegen::cublas_args(*g), b.real.data(), a.real.data(), c.data());
    if (g->to_workspace) {
      std::copy(c.begin(), c.end(), workspace_.begin());
    } else {
      HostTensor out = HostTensor::zeros(graph_.value(g->c).type);
      out.real = std::move(c);
      const StoredTensor s = to_storage(out);
      std::memcpy(address(g->c), s.bytes.data(), s.bytes.size());
    }
  }
  if (!k.source.empty())
    emulator_.launch(k.name, library_->entry(k.name), args.data(), {k.grid, k.block, k.cooperative, order});
}

std::vector<HostTensor> HostRunner::run(reference::Environment<float>& env, codegen::ThreadOrder order) {
  for (ir::ValueId v : layout_.owned()) {
    const ir::Op& op = graph_.producer(v);
    const ir::Value& value = graph_.value(v);
    HostTensor t = HostTensor::zeros(value.type);
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
    std::memcpy(aligned(own_[v]), s.bytes.data(), s.bytes.size());
  }
  for (size_t i = 0; i < kernels_.kernels.size(); ++i) {
    try {
      launch(kernels_.kernels[i], i, order);
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("launch {} ({} {}, op {}): {}", i, kernels_.kernels[i].family,
                                           kernels_.kernels[i].label, kernels_.kernels[i].op_index, e.what()));
    }
  }
  std::vector<HostTensor> outputs;
  for (ir::ValueId v : graph_.outputs()) outputs.push_back(read(v));
  for (const ir::Op& op : graph_.ops())
    if (op.kind == ir::OpKind::Update) env[graph_.value(op.operands[0]).name] = read(op.operands[1]);
  return outputs;
}

}  // namespace bertc::runtime
