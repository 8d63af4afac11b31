// Running a compiled plan on a Device (see plan_executor.h).
#include "runtime/plan_executor.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include <fmt/format.h>

#include "ir/out_of_memory.h"
#include "support/tensor_io.h"

namespace bertc::runtime {

using codegen::KernelSpec;
using codegen::ParamKind;

namespace {

ir::HostTensor<float> downloaded(Device& device, const void* buffer, const ir::TensorType& t, const std::string& name) {
  support::StoredTensor s{t.dtype, t.shape, std::vector<uint8_t>(static_cast<size_t>(t.bytes()))};
  device.download(s.bytes.data(), buffer, s.bytes.size());
  return support::to_host(s, t.dtype, name);
}

void upload(Device& device, void* buffer, const ir::HostTensor<float>& t) {
  const support::StoredTensor s = support::to_storage(t);
  device.upload(buffer, s.bytes.data(), s.bytes.size());
}

bool is_state(ir::OpKind k) { return k == ir::OpKind::Param || k == ir::OpKind::State; }

// BERTC_SYNC_LAUNCHES=1: a GPU reports a fault only at the next wait, far from the launch that
// caused it; waiting after every eager launch names that launch (at the cost of the overlap).
bool sync_after_each_launch() {
  const char* v = std::getenv("BERTC_SYNC_LAUNCHES");  // read per run: cheap, and a test can set it
  return v && *v && std::string(v) != "0";
}

}  // namespace

void* ResidentState::buffer(const std::string& name, const ir::TensorType& type) {
  auto [it, fresh] = entries_.try_emplace(name);
  if (fresh) {
    it->second.buffer = device_.allocate(static_cast<size_t>(std::max<int64_t>(type.bytes(), 1)),
                                         fmt::format("'{}' ({})", name, ir::to_string(type)));
    it->second.type = type;
  } else if (it->second.type != type) {
    throw std::logic_error(fmt::format("'{}' is {} in one graph and {} in another", name, ir::to_string(it->second.type),
                                       ir::to_string(type)));
  }
  return it->second.buffer;
}

void ResidentState::ensure_uploaded(const std::string& name, const ir::Environment<float>& env) {
  Entry& e = entries_.at(name);
  if (e.on_device) return;
  const auto it = env.find(name);
  if (it == env.end()) throw std::runtime_error(fmt::format("no value for '{}'", name));
  if (it->second.type != e.type)
    throw std::runtime_error(fmt::format("'{}' is {}, the program expects {}", name, ir::to_string(it->second.type),
                                         ir::to_string(e.type)));
  upload(device_, e.buffer, it->second);
  e.on_device = true;
}

void ResidentState::download(ir::Environment<float>& env) const {
  device_.synchronize();
  for (const auto& [name, e] : entries_)
    if (e.on_device) env[name] = downloaded(device_, e.buffer, e.type, name);
}

void ResidentState::download(const std::vector<std::string>& names, ir::Environment<float>& env) const {
  device_.synchronize();
  for (const std::string& name : names) {
    const Entry& e = entries_.at(name);
    if (e.on_device) env[name] = downloaded(device_, e.buffer, e.type, name);
  }
}

void ResidentState::upload_named(const std::vector<std::string>& names, const ir::Environment<float>& env) {
  for (const std::string& name : names) {
    entries_.at(name).on_device = false;
    ensure_uploaded(name, env);
  }
}

PlanExecutor::PlanExecutor(const ir::Graph& graph, codegen::GraphKernels kernels, Device& device,
                           std::shared_ptr<ResidentState> state, Launching launching)
    : graph_(graph), kernels_(std::move(kernels)), device_(device), state_(std::move(state)), launching_(launching),
      layout_(graph, kernels_.arena) {
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
  arena_ = device_.allocate(static_cast<size_t>(std::max<int64_t>(layout_.arena().bytes, 1)),
                            fmt::format("the {} graph's activations (its memory plan's arena)", graph.name()));
  if (workspace > 0) workspace_ = device_.allocate(workspace, fmt::format("the {} graph's matrix-product workspace", graph.name()));
  own_.assign(graph.num_values(), nullptr);
  size_t staged = 0;
  for (ir::ValueId v : layout_.owned()) {
    const auto bytes = static_cast<size_t>(std::max<int64_t>(graph.value(v).type.bytes(), 1));
    if (state_ && is_state(graph.producer(v).kind)) {
      own_[v] = state_->buffer(graph.value(v).name, graph.value(v).type);
      continue;
    }
    own_[v] = device_.allocate(bytes, fmt::format("'{}' ({})", graph.value(v).name, ir::to_string(graph.value(v).type)));
    staged_at_[v] = staged;
    staged += (bytes + 255) / 256 * 256;
  }
  staging_ = static_cast<unsigned char*>(
      device_.allocate_host(std::max<size_t>(staged, 1), fmt::format("the {} graph's input staging", graph.name())));
  scratch_.assign(kernels_.kernels.size(), nullptr);
  tables_.resize(kernels_.kernels.size());
  for (size_t i = 0; i < kernels_.kernels.size(); ++i)
    for (const codegen::KernelParam& p : kernels_.kernels[i].params) {
      if (p.kind == ParamKind::Scratch) {
        scratch_[i] = device_.allocate(p.scratch_bytes, fmt::format("kernel {}'s scratch", kernels_.kernels[i].name));
        device_.fill(scratch_[i], 0, p.scratch_bytes);  // zeroed once; every launch leaves its counters zeroed
      }
      if (p.kind == ParamKind::Table) {  // the buffers' addresses never change: upload them once
        std::vector<void*> entries;
        for (ir::ValueId v : p.table) entries.push_back(address(v));
        void* table = device_.allocate(entries.size() * sizeof(void*), "a kernel's table of buffer addresses");
        device_.upload(table, entries.data(), entries.size() * sizeof(void*));
        tables_[i].push_back(table);
      }
    }
  fresh_ = fresh_values();
}

// A value's bytes in the arena held other values before the launch that first writes it in a
// step: the launch writes them before anything reads them, or the read is of a dead value (which a
// GPU runs without a word). Left out: what it zeroes first, and bytes shared with a value it reads
// (an op in place).
std::vector<std::vector<ir::ValueId>> PlanExecutor::fresh_values() {
  std::vector<std::vector<ir::ValueId>> fresh(kernels_.kernels.size());
  std::vector<bool> written(graph_.num_values(), false);
  auto bytes_of = [&](ir::ValueId v) { return static_cast<size_t>(graph_.value(v).type.bytes()); };
  auto overlap = [&](ir::ValueId a, ir::ValueId b) {
    const auto *pa = static_cast<unsigned char*>(address(a)), *pb = static_cast<unsigned char*>(address(b));
    return pa < pb + bytes_of(b) && pb < pa + bytes_of(a);
  };
  for (size_t i = 0; i < kernels_.kernels.size(); ++i) {
    const KernelSpec& k = kernels_.kernels[i];
    std::vector<ir::ValueId> writes, reads;
    for (const codegen::KernelParam& p : k.params) {
      if (p.kind == ParamKind::Buffer) (p.written ? writes : reads).push_back(p.value);
      if (p.kind == ParamKind::Table)
        for (size_t e = 0; e < p.table.size(); ++e) (p.table_written.at(e) ? writes : reads).push_back(p.table[e]);
    }
    if (k.library && !k.library->to_workspace) writes.push_back(k.library->c);
    for (ir::ValueId v : writes) {
      if (written[v]) continue;
      written[v] = true;
      const bool zeroed = std::find(k.zero_before.begin(), k.zero_before.end(), v) != k.zero_before.end();
      const bool in_place = std::any_of(reads.begin(), reads.end(), [&](ir::ValueId r) { return overlap(v, r); });
      if (layout_.place(v).kind == ValuePlace::Arena && !zeroed && !in_place && !k.library) fresh[i].push_back(v);
    }
  }
  return fresh;
}

void* PlanExecutor::address(ir::ValueId v) {
  const ValuePlace p = layout_.place(v);
  return p.kind == ValuePlace::Arena ? static_cast<unsigned char*>(arena_) + p.offset : own_[p.owner];
}

ir::HostTensor<float> PlanExecutor::read(ir::ValueId v) {
  return downloaded(device_, address(v), graph_.value(v).type, graph_.value(v).name);
}

namespace {

// The buffers launch `k`'s arguments name, as `buffers` places them.
LaunchFootprint footprint(const ir::Graph& graph, const KernelSpec& k, const LaunchBuffers& buffers) {
  auto value = [&](ir::ValueId v) {
    const ir::Value& value = graph.value(v);
    return LaunchFootprint::Buffer{buffers.address(v), static_cast<size_t>(value.type.bytes()),
                                   fmt::format("'{}' ({})", value.name, ir::to_string(value.type))};
  };
  LaunchFootprint f;
  size_t table = 0;
  for (const codegen::KernelParam& p : k.params) {
    switch (p.kind) {
      case ParamKind::Buffer: f.buffers.push_back(value(p.value)); break;
      case ParamKind::Table:
        f.buffers.push_back({buffers.tables.at(table++), p.table.size() * sizeof(void*),
                             fmt::format("the table of {} buffers '{}'", p.table.size(), p.name)});
        for (ir::ValueId v : p.table) f.buffers.push_back(value(v));
        break;
      case ParamKind::Scratch: f.buffers.push_back({buffers.scratch, p.scratch_bytes, fmt::format("its scratch '{}'", p.name)}); break;
      case ParamKind::Workspace:
        f.buffers.push_back({buffers.workspace, p.scratch_bytes, fmt::format("its workspace '{}'", p.name)});
        // (every launch's to use afresh: what an earlier launch left there is dead, but for a
        // cuBLAS product writing it for this launch's epilogue)
        if (!(k.library && k.library->to_workspace)) f.fresh.push_back(f.buffers.back());
        break;
      case ParamKind::Integer: break;
    }
  }
  for (ir::ValueId v : buffers.fresh) f.fresh.push_back(value(v));
  return f;
}

}  // namespace

void issue_launch(Device& device, const ir::Graph& graph, const KernelSpec& k, const LaunchBuffers& buffers) {
  std::vector<void*> values;  // what each argument slot points at
  size_t table = 0;
  for (const codegen::KernelParam& p : k.params) {
    switch (p.kind) {
      case ParamKind::Buffer: values.push_back(buffers.address(p.value)); break;
      case ParamKind::Table: values.push_back(buffers.tables.at(table++)); break;
      case ParamKind::Scratch: values.push_back(buffers.scratch); break;
      case ParamKind::Workspace: values.push_back(buffers.workspace); break;
      case ParamKind::Integer: values.push_back(reinterpret_cast<void*>(static_cast<intptr_t>(p.integer))); break;
    }
  }
  std::vector<void*> args;  // kernel arguments are passed by address
  for (void*& v : values) args.push_back(&v);
  for (ir::ValueId v : k.zero_before)
    device.fill(buffers.address(v), 0, static_cast<size_t>(graph.value(v).type.bytes()));
  if (const auto& g = k.library)
    device.library_product(codegen::library_product_args(*g), buffers.address(g->b), buffers.address(g->a),
                g->to_workspace ? buffers.workspace : buffers.address(g->c));
  if (!k.source.empty()) device.launch_within(k, args.data(), footprint(graph, k, buffers));
}

void PlanExecutor::launch(size_t index) {
  issue_launch(device_, graph_, kernels_.kernels[index],
               {[this](ir::ValueId v) { return address(v); }, tables_[index], scratch_[index], workspace_, fresh_[index]});
}

void PlanExecutor::stage_inputs(ir::Environment<float>& env) {
  for (ir::ValueId v : layout_.owned()) {
    const ir::Op& op = graph_.producer(v);
    const ir::Value& value = graph_.value(v);
    if (state_ && is_state(op.kind)) {
      state_->ensure_uploaded(value.name, env);
      continue;
    }
    ir::HostTensor<float> t = ir::HostTensor<float>::zeros(value.type);
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
    const support::StoredTensor s = support::to_storage(t);
    unsigned char* staged = staging_ + staged_at_.at(v);
    std::memcpy(staged, s.bytes.data(), s.bytes.size());
    device_.upload_async(own_[v], staged, s.bytes.size());
  }
}

std::string PlanExecutor::describe_arguments(size_t index) {
  const KernelSpec& k = kernels_.kernels[index];
  std::string out;
  for (const codegen::KernelParam& p : k.params) {
    out += fmt::format("\n  {} {}", p.c_type, p.name);
    if (p.kind == ParamKind::Buffer) {
      const ir::Value& v = graph_.value(p.value);
      out += fmt::format(" = {} ('{}', {}, {} bytes)", address(p.value), v.name, ir::to_string(v.type), v.type.bytes());
    } else if (p.kind == ParamKind::Table) {
      out += fmt::format(" = table of {} buffers", p.table.size());
    } else if (p.kind == ParamKind::Integer) {
      out += fmt::format(" = {}", p.integer);
    } else {
      out += fmt::format(" = {} bytes of {}", p.scratch_bytes, p.kind == ParamKind::Scratch ? "scratch" : "workspace");
    }
  }
  return out;
}

void PlanExecutor::set_prologue(std::function<void()> prologue) {
  if (ran_) throw std::logic_error("a plan's prologue is set before its first run");
  prologue_ = std::move(prologue);
}

void PlanExecutor::add_hook(size_t after, std::function<void()> work) {
  if (ran_) throw std::logic_error("a plan's hooks are added before its first run");
  if (after > kernels_.kernels.size()) throw std::logic_error(fmt::format("no launch {} to hook", after));
  hooks_[after].push_back(std::move(work));
}

void PlanExecutor::issue_hooks(size_t after) {
  if (!hooks_on_) return;
  const auto it = hooks_.find(after);
  if (it != hooks_.end())
    for (const auto& work : it->second) work();
}

std::optional<size_t> PlanExecutor::last_writer(ir::ValueId v) {
  const auto* begin = static_cast<unsigned char*>(address(v));
  const auto* end = begin + graph_.value(v).type.bytes();
  auto overlaps = [&](ir::ValueId w) {
    const auto* b = static_cast<unsigned char*>(address(w));
    return b < end && begin < b + graph_.value(w).type.bytes();
  };
  std::optional<size_t> last;
  for (size_t i = 0; i < kernels_.kernels.size(); ++i) {
    const KernelSpec& k = kernels_.kernels[i];
    bool writes = k.library && !k.library->to_workspace && overlaps(k.library->c);
    for (const codegen::KernelParam& p : k.params) {
      if (p.kind == ParamKind::Buffer && p.written) writes = writes || overlaps(p.value);
      if (p.kind == ParamKind::Table)
        for (size_t e = 0; e < p.table.size(); ++e) writes = writes || (p.table_written.at(e) && overlaps(p.table[e]));
    }
    if (writes) last = i;
  }
  return last;
}

void PlanExecutor::issue_all(bool eager) {
  const bool check_each = eager && sync_after_each_launch();
  if (prologue_) prologue_();
  for (size_t i = 0; i < kernels_.kernels.size(); ++i) {
    const KernelSpec& k = kernels_.kernels[i];
    try {
      launch(i);
      issue_hooks(i);
      if (check_each) device_.synchronize();
    } catch (const std::bad_alloc&) {
      throw;  // (out of host memory: said as such, with its advice, not as "std::bad_alloc" of a launch)
    } catch (const ir::OutOfMemory&) {
      throw;
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("launch {} ({} {} grid {}x{}x{} block {}x{}x{}, op {} {}): {}{}", i,
                                           ir::enum_name(k.family), k.name, k.grid.x, k.grid.y, k.grid.z, k.block.x,
                                           k.block.y, k.block.z, k.op_index, k.label, e.what(),
                                           check_each ? "\narguments:" + describe_arguments(i) : ""));
    }
  }
  issue_hooks(kernels_.kernels.size());
  issue_updates();
}

void PlanExecutor::issue_timed() {
  std::vector<LaunchTime>& times = *std::exchange(profile_, nullptr);
  if (prologue_) prologue_();  // untimed: the profile times the plan's own launches
  std::vector<std::function<void()>> launches;
  for (size_t i = 0; i < kernels_.kernels.size(); ++i)
    launches.push_back([this, i] {
      launch(i);
      issue_hooks(i);
    });
  const std::vector<double> seconds = device_.time_each(launches);
  for (size_t i = 0; i < seconds.size(); ++i) times.push_back({i, seconds[i]});
  issue_hooks(kernels_.kernels.size());
  issue_updates();
}

void PlanExecutor::issue_updates() {
  // A copy unless the plan wrote the next value in place.
  if (!state_) return;
  for (const ir::Op& op : graph_.ops()) {
    if (op.kind != ir::OpKind::Update) continue;
    const ir::ValueId target = op.operands[0], next = op.operands[1];
    if (address(next) != address(target))
      device_.copy(address(target), address(next), static_cast<size_t>(graph_.value(target).type.bytes()));
  }
}

void PlanExecutor::wait() {
  try {
    device_.synchronize();
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("{}\n(a launch of this plan failed; run again with BERTC_SYNC_LAUNCHES=1 "
                                         "to wait after each launch and name the one at fault)",
                                         e.what()));
  }
}

std::vector<ir::HostTensor<float>> PlanExecutor::run(ir::Environment<float>& env,
                                                           const std::vector<bool>* download) {
  ran_ = true;
  device_.synchronize();  // the staging area may still be read by the previous run's copies
  stage_inputs(env);
  if (profile_) {
    issue_timed();
    warmed_up() = true;
  } else if (launching_ == Launching::Eager || !warmed_up()) {
    // The first run of a Graph plan is eager too: libraries set themselves up on their first
    // call (cuBLAS), which a capture cannot record, and BERTC_SYNC_LAUNCHES can name a faulting launch.
    issue_all(true);
    warmed_up() = true;
  } else {
    std::unique_ptr<DeviceGraph>& recorded = recorded_[hooks_on_ ? 1 : 0];
    if (!recorded) {
      recorded = device_.record([this] { issue_all(false); });
      recorded_census_.push_back(recorded->census());
    }
    device_.replay(*recorded);
  }
  wait();
  return collect(env, download);
}

std::pair<std::vector<ir::HostTensor<float>>, std::vector<ir::HostTensor<float>>> PlanExecutor::run_with(
    PlanExecutor& next, ir::Environment<float>& env, const std::vector<bool>* download,
    const std::vector<bool>* next_download) {
  if (&next.device_ != &device_ || !state_ || next.state_ != state_)
    throw std::logic_error("two plans run as one device graph must share their device and resident state");
  ran_ = next.ran_ = true;
  device_.synchronize();
  stage_inputs(env);
  next.stage_inputs(env);
  if (profile_ || next.profile_) {  // each part timed, or eager
    if (profile_) issue_timed();
    else issue_all(true);
    if (next.profile_) next.issue_timed();
    else next.issue_all(true);
    warmed_up() = next.warmed_up() = true;
  } else if (launching_ == Launching::Eager || !warmed_up() || !next.warmed_up()) {
    issue_all(true);  // eager the first time, as in run()
    next.issue_all(true);
    warmed_up() = next.warmed_up() = true;
  } else {
    std::unique_ptr<DeviceGraph>& recorded = recorded_with_[{&next, hooks_on_, next.hooks_on_}];
    if (!recorded) {
      recorded = device_.record([&] {
        issue_all(false);
        next.issue_all(false);
      });
      recorded_census_.push_back(recorded->census());
    }
    device_.replay(*recorded);
  }
  wait();
  auto outputs = collect(env, download);
  return {std::move(outputs), next.collect(env, next_download)};
}

std::vector<ir::HostTensor<float>> PlanExecutor::collect(ir::Environment<float>& env,
                                                               const std::vector<bool>* download) {
  // Without resident state, the updates' values go back into env.
  if (!state_)
    for (const ir::Op& op : graph_.ops())
      if (op.kind == ir::OpKind::Update) env[graph_.value(op.operands[0]).name] = read(op.operands[1]);
  std::vector<ir::HostTensor<float>> outputs;
  for (size_t i = 0; i < graph_.outputs().size(); ++i)
    outputs.push_back(!download || download->at(i) ? read(graph_.outputs()[i]) : ir::HostTensor<float>{});
  return outputs;
}

}  // namespace bertc::runtime
