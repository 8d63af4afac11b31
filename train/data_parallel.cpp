// Data-parallel steps (see data_parallel.h).
#include "train/data_parallel.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xxhash.h>

#include "ir/value_names.h"
#include "passes/optimizer_shards.h"
#include "support/options.h"
#include "run_folder/train_error.h"

namespace bertc::train {
namespace {

// The file holding the running code, to hash. /proc/self/exe opens the running file even after it
// was replaced on disk, but names the loader when bertc runs through one (ld-linux.so PATH ..., as
// the GPU check's dynamic bundle does): then the path of the mapping that holds this function
// (/proc/self/maps: "from-to perms offset dev inode path", the path possibly with spaces) is
// hashed, and refused when that file is no longer the one running (" (deleted)").
std::string program_file() {
  const auto here = reinterpret_cast<uintptr_t>(&program_file);
  std::ifstream maps("/proc/self/maps");
  std::string path;
  for (std::string line; std::getline(maps, line);) {
    std::istringstream fields(line);
    std::string range, perms, offset, device, inode;
    fields >> range >> perms >> offset >> device >> inode;
    const size_t dash = range.find('-');
    if (dash == std::string::npos) continue;
    const uintptr_t from = std::stoull(range.substr(0, dash), nullptr, 16), to = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (here < from || here >= to) continue;
    std::getline(fields >> std::ws, path);
    break;
  }
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (path.empty() || (!ec && exe.string() == path)) return "/proc/self/exe";
  if (path.ends_with(" (deleted)"))
    throw run_folder::TrainError(fmt::format("this rank's program {} was replaced on disk after it started: start the ranks again",
                                 path.substr(0, path.size() - 10)));
  return path;
}

// This process's program, hashed: ranks running different bertc builds are refused.
uint64_t executable_hash() {
  std::ifstream in(program_file(), std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  const std::string s = bytes.str();
  return XXH3_64bits(s.data(), s.size());
}

// The value each accumulator's update takes in the step graph (its gradient summed over the
// micro-batches so far), by accumulator.
std::vector<ir::ValueId> next_values(const ir::Graph& step, const std::vector<std::string>& accumulators) {
  std::map<std::string, ir::ValueId> next;
  for (const ir::Op& op : step.ops())
    if (op.kind == ir::OpKind::Update) next[step.value(op.operands[0]).name] = op.operands[1];
  std::vector<ir::ValueId> out;
  for (const std::string& name : accumulators) {
    const auto it = next.find(name);
    if (it == next.end()) throw std::logic_error(fmt::format("the step graph has no update of '{}'", name));
    out.push_back(it->second);
  }
  return out;
}

// For the line that says where the sums are made: "rounded to fp16 on the device and " or "".
std::string rounded_on_device(distributed::Compression c) {
  return c == distributed::Compression::None ? "" : fmt::format("rounded to {} on the device and ", ir::enum_name(c));
}

// Compressions made on the host alone (their error feedback and products): never NCCL's sums.
bool on_host_only(distributed::Compression c) { return !sums_overlap_backward(c, /*finetune=*/false); }

// The step graph's params in gradient_tensors' order (the last first).
std::vector<ir::ValueId> momentum_params(const ir::Graph& step) {
  std::vector<ir::ValueId> params = step.values_of(ir::OpKind::Param);
  std::reverse(params.begin(), params.end());
  return params;
}

// The ranks whose value differs from rank 0's.
std::vector<int> differing(const std::vector<uint64_t>& values) {
  std::vector<int> out;
  for (size_t q = 1; q < values.size(); ++q)
    if (values[q] != values[0]) out.push_back(static_cast<int>(q));
  return out;
}

}  // namespace

bool shards_optimizer(const run_config::TrainConfig& t, int ranks) { return t.zero_stage == 1 && ranks > 1; }

bool sums_overlap_backward(distributed::Compression c, bool finetune) {
  return !finetune && c != distributed::Compression::PowerSgd && c != distributed::Compression::OneBit;
}

distributed::ExchangeOptions exchange_options(const run_config::TrainConfig& t) {
  distributed::ExchangeOptions o;
  o.compression = t.gradient_compression;
  // Clamped below 2^62 bytes: a larger number of MiB means "one bucket", not an overflow.
  o.bucket_bytes = static_cast<int64_t>(std::min(t.allreduce_bucket_mb * double(1 << 20), 0x1p62));
  o.powersgd_rank = t.powersgd_rank;
  o.powersgd_warmup_steps = t.powersgd_warmup_steps;
  o.seed = static_cast<uint64_t>(t.seed);
  o.onebit_warmup_steps = t.onebit_warmup_steps;
  o.beta1 = t.beta1;
  o.beta2 = t.beta2;
  o.epsilon = t.epsilon;
  o.max_grad_norm = t.max_grad_norm;
  return o;
}

std::optional<ir::DType> rounded_dtype(distributed::Compression c) {
  if (c == distributed::Compression::Fp16) return ir::DType::F16;
  if (c == distributed::Compression::Bf16) return ir::DType::BF16;
  return std::nullopt;
}

std::vector<codegen::KernelSpec> runtime_kernels(const ir::Graph& step, const run_config::TrainConfig& t) {
  std::vector<codegen::KernelSpec> kernels;
  if (const std::optional<ir::DType> half = rounded_dtype(t.gradient_compression))
    for (auto& [n, casts] : codegen::gradient_casts_for(step, *half)) {
      kernels.push_back(std::move(casts.pack));
      kernels.push_back(std::move(casts.unpack));
    }
  return kernels;
}

std::vector<distributed::GradientTensor> gradient_tensors(const ir::Graph& step) {
  std::vector<distributed::GradientTensor> tensors;
  const std::vector<ir::ValueId> params = step.values_of(ir::OpKind::Param);
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    const ir::Value& p = step.value(*it);
    if (p.type.dtype != ir::DType::F32)
      throw run_folder::TrainError(fmt::format("data-parallel training sums f32 gradients, and param '{}' is {}", p.name,
                                   ir::to_string(p.type)));
    tensors.push_back({ir::names::grad_accumulator_of(p.name), p.type.shape});
  }
  return tensors;
}

uint64_t collective_reserve_bytes(const run_config::TrainConfig& t, int ranks, const runtime::DeviceCapabilities& device,
                                  int64_t param_elements) {
  const bool library = device.in_run_sums == runtime::InRunSums::SideQueue && !train::shards_optimizer(t, ranks) &&
                       (ranks > 1 || t.allreduce == distributed::AllReduce::Nccl) &&
                       t.allreduce != distributed::AllReduce::Host && !on_host_only(t.gradient_compression);
  if (!library) return 0;
  const uint64_t shares = rounded_dtype(t.gradient_compression) ? 2 * static_cast<uint64_t>(param_elements) : 0;
  return device.collective_library_bytes + shares;
}

DataParallel::DataParallel(distributed::Communicator& comm, const passes::TrainingProgram& program, const run_config::TrainConfig& t)
    : comm_(comm), step_graph_(program.step), allreduce_(t.allreduce), timeout_(t.rank_timeout),
      accumulation_(t.gradient_accumulation_steps) {
  // One rank sums nothing, unless NCCL is asked for (the GPU check compares it with no exchange);
  // 1-bit Adam and LAMB compress the momentum on one rank too (its optimizer takes the momentum the
  // exchange makes).
  const bool onebit = t.gradient_compression == distributed::Compression::OneBit;
  if (comm_.size() == 1 && allreduce_ != distributed::AllReduce::Nccl && !onebit) return;
  const std::string compression(ir::enum_name(t.gradient_compression));
  if (on_host_only(t.gradient_compression) && program.step.find(ir::names::kLossScale))
    throw run_folder::TrainError(fmt::format("gradient_compression = \"{}\" with loss scaling (precision fp16) is not "
                                             "supported yet: its error feedback would mix gradients of different loss "
                                             "scales; use precision bf16 (sm_80 and newer) or fp32, or "
                                             "gradient_compression = \"fp16\"",
                                             compression));
  if (allreduce_ == distributed::AllReduce::Nccl && on_host_only(t.gradient_compression))
    throw run_folder::TrainError(fmt::format("[train] allreduce = \"nccl\" sums fp32, fp16 or bf16 gradients on the GPU, "
                                             "and gradient_compression = \"{}\" is made on the host: set allreduce = "
                                             "\"auto\" (or \"host\"), or gradient_compression = \"fp16\", \"bf16\" or "
                                             "\"none\"",
                                             compression));
  tensors_ = gradient_tensors(program.step);
  for (const distributed::GradientTensor& g : tensors_) accumulators_.push_back(g.name);
  if (train::shards_optimizer(t, comm_.size())) shard_optimizer(program);
  onebit_name_ = t.optimizer.kind == ir::OpKind::Lamb ? "1-bit LAMB" : "1-bit Adam";
  if (onebit)
    for (ir::ValueId p : momentum_params(program.step)) {
      momenta_.push_back(ir::names::optimizer_state_of(program.step.value(p).name, "exp_avg"));
      variances_.push_back(ir::names::optimizer_state_of(program.step.value(p).name, "exp_avg_sq"));
    }
  exchange_ = std::make_unique<distributed::GradientExchange>(comm_, tensors_, exchange_options(t));
  path_ = SumPath::Staged;
}

void DataParallel::shard_optimizer(const passes::TrainingProgram& program) {
  // (param_owners is in values_of(Param) order; tensors_ the reverse: the last param's first)
  std::vector<int> owners = passes::param_owners(program.step, comm_.size());
  tensor_owner_.assign(owners.rbegin(), owners.rend());
  for (ir::ValueId p : momentum_params(program.step)) params_.push_back(program.step.value(p).name);
  shard_counts_.assign(static_cast<size_t>(comm_.size()), 0);
  for (int q = 0; q < comm_.size(); ++q)
    for (size_t t = 0; t < tensors_.size(); ++t)
      if (tensor_owner_[t] == q) {
        shard_order_.push_back(t);
        shard_counts_[static_cast<size_t>(q)] += static_cast<size_t>(ir::TensorType{ir::DType::F32, tensors_[t].shape}.numel());
      }
  sharded_state_owner_ = passes::state_owners(program.step, program.optimizer, comm_.size());
}

std::vector<std::string> DataParallel::owned_by(const std::vector<std::string>& names, int owner) const {
  std::vector<std::string> out;
  for (size_t i = 0; i < names.size(); ++i)
    if (tensor_owner_[i] == owner) out.push_back(names[i]);
  return out;
}

std::vector<float> DataParallel::pack_shares(const support::Environment& env, const std::vector<std::string>& names,
                                             bool all) const {
  std::vector<float> packed;
  packed.reserve(std::accumulate(shard_counts_.begin(), shard_counts_.end(), size_t{0}));
  for (size_t t : shard_order_) {
    const std::vector<float>& data = env.at(names[t]).real;
    if (all || tensor_owner_[t] == rank()) packed.insert(packed.end(), data.begin(), data.end());
    else packed.resize(packed.size() + data.size(), 0.0f);
  }
  return packed;
}

void DataParallel::unpack_shares(const std::vector<float>& packed, support::Environment& env,
                                 const std::vector<std::string>& names, bool mine) const {
  size_t at = 0;
  for (size_t t : shard_order_) {
    std::vector<float>& data = env.at(names[t]).real;
    if ((tensor_owner_[t] == rank()) == mine)
      std::copy_n(packed.begin() + static_cast<std::ptrdiff_t>(at), data.size(), data.begin());
    at += data.size();
  }
}

void DataParallel::after_optimizer(GraphRunner& optimizer, GraphRunner& step, support::Environment& env, int64_t step_number) {
  if (!shards_optimizer()) return;
  optimizer.download_state(owned_by(params_, rank()), env);
  std::vector<float> packed = pack_shares(env, params_, /*all=*/false);
  comm_.all_gather_shares(packed.data(), shard_counts_, fmt::format("the params the ranks updated at step {}", step_number));
  unpack_shares(packed, env, params_, /*mine=*/false);
  std::vector<std::string> others;
  for (int q = 0; q < ranks(); ++q)
    if (q != rank())
      for (std::string& name : owned_by(params_, q)) others.push_back(std::move(name));
  step.upload_state(others, env);
}

void DataParallel::drop_others_state(support::Environment& env) const {
  for (const auto& [name, owner] : sharded_state_owner_)
    if (owner != rank()) env.erase(name);
}

void DataParallel::gather_sharded_state(support::Environment& env, const run_folder::TensorManifest& manifest) {
  if (!shards_optimizer()) return;
  for (int q = 1; q < ranks(); ++q) {
    std::vector<std::string> names;  // (sorted by name: the same order on every rank)
    size_t total = 0;
    for (const auto& [name, owner] : sharded_state_owner_)
      if (owner == q) {
        names.push_back(name);
        total += static_cast<size_t>(manifest.at(name).numel());
      }
    if (total == 0) continue;
    std::vector<float> packed;
    packed.reserve(total);
    if (rank() == q)
      for (const std::string& name : names) packed.insert(packed.end(), env.at(name).real.begin(), env.at(name).real.end());
    else packed.resize(total);
    comm_.broadcast(packed.data(), total * sizeof(float), q, fmt::format("rank {}'s optimizer state for a checkpoint", q));
    if (!leader()) continue;
    size_t at = 0;
    for (const std::string& name : names) {
      support::HostTensor t = support::HostTensor::zeros(manifest.at(name));
      std::copy_n(packed.begin() + static_cast<std::ptrdiff_t>(at), t.real.size(), t.real.begin());
      at += t.real.size();
      env[name] = std::move(t);
    }
  }
}

std::string DataParallel::attach(GraphRunner& step, GraphRunner& optimizer, runtime::Device* device) {
  if (path_ == SumPath::None) return "";
  const std::string said = attach_sums(step, optimizer, device);
  const std::string split = exchange_->compression_summary();
  return split.empty() ? said : said + "; " + split;
}

std::string DataParallel::attach_sums(GraphRunner& step, GraphRunner& optimizer, runtime::Device* device) {
  const runtime::InRunSums in_run = device ? device->capabilities().in_run_sums : runtime::InRunSums::None;
  if (allreduce_ == distributed::AllReduce::Nccl && in_run != runtime::InRunSums::SideQueue)
    throw run_folder::TrainError(fmt::format("[train] allreduce = \"nccl\" sums a GPU's gradients, and this run trains on {}: "
                                 "train with --device cuda, or set allreduce = \"auto\"",
                                 device ? device->name() : "the CPU reference"));
  if (shards_optimizer())
    return fmt::format("ZeRO stage 1: each rank's share of the gradients summed onto it over {} (a reduce-scatter) "
                       "between the step and the optimizer (staged through host memory), the optimizer state of {} of "
                       "{} params kept here, the updated params to every rank (an all-gather)",
                       comm_.engine(), owned_by(params_, rank()).size(), params_.size());
  if (exchange_->options().compression == distributed::Compression::OneBit)
    return fmt::format("{}: fp32 sums over {} for {} step(s), then the optimizer's momentum as signs, between "
                       "the step and the optimizer (staged through host memory)",
                       onebit_name_, comm_.engine(), exchange_->options().onebit_warmup_steps);
  if (in_run == runtime::InRunSums::SideQueue) return attach_library_sums(*device, step);
  if (exchange_->options().compression == distributed::Compression::PowerSgd) {
    if (in_run != runtime::InRunSums::HostCalls)
      return "summed on the host between the step and the optimizer (PowerSGD needs every gradient at once)";
    // Every gradient at once, in the optimizer's graph, on the accumulators (host memory here).
    runtime::PlanExecutor& o = *optimizer.plan();
    std::vector<float*> data;
    for (const std::string& name : accumulators_) data.push_back(static_cast<float*>(o.value_address(*o.graph().find(name))));
    o.set_prologue(
        [this, device, data] { device->issue_host_call([this, data] { result_ = exchange_->exchange(data, step_); }); });
    path_ = SumPath::InRuns;
    return fmt::format("summed over {} in the optimizer's device graph (PowerSGD needs every gradient at once)",
                       comm_.engine());
  }
  if (in_run == runtime::InRunSums::HostCalls) {
    runtime::CollectiveOpening opened = device->open_collective(comm_, timeout_);
    if (!opened.sums)  // (host calls run the communicator's own sums: nothing to be missing)
      throw std::logic_error(fmt::format("{} runs host calls but opened no sums: {}", device->name(), opened.why_not));
    return attach_device_sums(*device, step, std::move(opened.sums));
  }
  // Each bucket's sum starts as soon as the step has computed its gradients.
  step.add_value_hooks(
      bucket_values(), [this](size_t b, const GraphRunner::GroupData& d) { exchange_->start_bucket(b, d); },
      [this](const std::vector<GraphRunner::GroupData>& groups) { result_ = exchange_->finish_buckets(by_tensor(groups)); });
  path_ = SumPath::InRuns;
  return fmt::format("summed over {} among the step's ops, each of {} bucket(s) started once the backward has written it",
                     comm_.engine(), exchange_->buckets().size());
}

std::vector<std::vector<ir::ValueId>> DataParallel::bucket_values() const {
  const std::vector<ir::ValueId> next = next_values(step_graph_, accumulators_);
  std::vector<std::vector<ir::ValueId>> groups;
  for (const std::vector<size_t>& bucket : exchange_->buckets()) {
    groups.emplace_back();
    for (size_t t : bucket) groups.back().push_back(next[t]);
  }
  return groups;
}

std::vector<float*> DataParallel::by_tensor(const std::vector<GraphRunner::GroupData>& groups) const {
  std::vector<float*> data(tensors_.size(), nullptr);
  for (size_t b = 0; b < groups.size(); ++b)
    for (size_t j = 0; j < groups[b].size(); ++j) data[exchange_->buckets()[b][j]] = groups[b][j];
  return data;
}

std::string DataParallel::attach_library_sums(runtime::Device& device, GraphRunner& step) {
  const distributed::Compression compression = exchange_->options().compression;
  if (allreduce_ == distributed::AllReduce::Host)
    return fmt::format("staged through host memory and summed over {} ([train] allreduce)", comm_.engine());
  if (compression == distributed::Compression::PowerSgd)
    return fmt::format("powersgd-compressed on the host and summed over {} (PowerSGD's products run on the host)",
                       comm_.engine());
  runtime::CollectiveOpening opened = device.open_collective(comm_, timeout_);
  if (!opened.sums) {
    if (allreduce_ == distributed::AllReduce::Nccl)
      throw run_folder::TrainError(fmt::format("[train] allreduce = \"nccl\", and {}: {}, or set allreduce = \"auto\"",
                                               opened.why_not, opened.fix));
    return fmt::format("staged through host memory and summed over {}: {}", comm_.engine(), opened.why_not);
  }
  // The kernels that round the gradients, compiled now or taken from a compiled program's images
  // (one compiled before they existed has none): every rank must have them, else all stage.
  if (const std::optional<ir::DType> half = rounded_dtype(compression)) {
    std::string why;
    try {
      load_casts(device, *half);
    } catch (const std::runtime_error& e) {
      why = e.what();
    }
    const std::vector<uint64_t> loaded = comm_.all_gather(why.empty() ? 1 : 0, "the start-up check of the gradient casts' kernels");
    if (std::count(loaded.begin(), loaded.end(), 0) > 0) {
      if (why.empty()) why = "another rank could not load them";
      if (allreduce_ == distributed::AllReduce::Nccl)
        throw run_folder::TrainError(fmt::format("[train] allreduce = \"nccl\" with gradient_compression = \"{}\": the kernels that "
                                     "round the gradients on the GPU did not load ({}): compile the program again, or set "
                                     "allreduce = \"auto\"",
                                     ir::enum_name(compression), why));
      return fmt::format("{}-compressed on the host and summed over {}: the kernels that round the gradients on the GPU "
                         "did not load ({})",
                         ir::enum_name(compression), comm_.engine(), why);
    }
  }
  return attach_device_sums(device, step, std::move(opened.sums));
}

std::string DataParallel::attach_device_sums(runtime::Device& device, GraphRunner& step,
                                             std::unique_ptr<runtime::DeviceCollective> sums) {
  device_sums_ = std::move(sums);
  device_buckets_ = device_buckets(device, exchange_->options().compression);
  path_ = SumPath::OnDevice;
  step.add_value_hooks(
      bucket_values(),
      [this, &device](size_t b, const GraphRunner::GroupData& d) {
        // The bucket's gradients, or their 16-bit shares rounded into its buffer, are summed once
        // the launches so far have written them, while the launches go on with the backward where
        // the device can (NCCL on a GPU's second stream).
        const DeviceBucket& bucket = device_buckets_[b];
        std::vector<runtime::DeviceCollective::Span> spans;
        for (size_t j = 0; j < d.size(); ++j) {
          if (bucket.packed) launch_cast(device, b, j, /*pack=*/true, d[j]);
          else spans.push_back({d[j], bucket.counts[j]});
        }
        if (bucket.packed) spans = {{bucket.packed, bucket.total}};
        device_sums_->issue_sum(spans, bucket.element);
      },
      // The updates (the summed gradients into the accumulators) wait for every sum, widened
      // back from 16 bits first when compressed.
      [this, &device](const std::vector<GraphRunner::GroupData>& groups) {
        device_sums_->join();
        for (size_t b = 0; b < groups.size(); ++b)
          if (device_buckets_[b].packed)
            for (size_t j = 0; j < groups[b].size(); ++j) launch_cast(device, b, j, /*pack=*/false, groups[b][j]);
      });
  return fmt::format("{}{}, each of {} bucket(s) started once the backward has written it",
                     rounded_on_device(exchange_->options().compression), device_sums_->describe(),
                     exchange_->buckets().size());
}

std::vector<DataParallel::DeviceBucket> DataParallel::device_buckets(runtime::Device& device, distributed::Compression compression) {
  const std::optional<ir::DType> half = rounded_dtype(compression);
  if (half && casts_.empty()) load_casts(device, *half);
  std::vector<DeviceBucket> buckets;
  for (const std::vector<size_t>& tensors : exchange_->buckets()) {
    DeviceBucket& bucket = buckets.emplace_back();
    bucket.element = distributed::sum_element(compression);
    for (size_t t : tensors) {
      const int64_t n = ir::TensorType{ir::DType::F32, tensors_[t].shape}.numel();
      bucket.counts.push_back(static_cast<size_t>(n));
      if (half) bucket.casts.push_back(&casts_.at(n));
    }
    bucket.total = std::accumulate(bucket.counts.begin(), bucket.counts.end(), size_t{0});
    if (half)
      bucket.packed = device.allocate(bucket.total * 2, fmt::format("the {} gradient sums of bucket {}",
                                                                    ir::enum_name(compression), buckets.size() - 1));
  }
  return buckets;
}

void DataParallel::load_casts(runtime::Device& device, ir::DType half) {
  // The kernels' launch geometry follows the tensor's size: one pair per distinct size.
  std::map<int64_t, codegen::GradientCasts> casts = codegen::gradient_casts_for(step_graph_, half);
  std::vector<const codegen::KernelSpec*> kernels;
  for (const auto& [n, pair] : casts) kernels.insert(kernels.end(), {&pair.pack, &pair.unpack});
  device.load(kernels);
  casts_ = std::move(casts);  // (a map's move keeps its nodes: the pointers stay good)
}

void DataParallel::launch_cast(runtime::Device& device, size_t b, size_t j, bool pack, float* gradient) {
  const DeviceBucket& bucket = device_buckets_[b];
  const size_t before = std::accumulate(bucket.counts.begin(), bucket.counts.begin() + static_cast<std::ptrdiff_t>(j), size_t{0});
  void* half = static_cast<unsigned char*>(bucket.packed) + 2 * before;
  void* from = pack ? static_cast<void*>(gradient) : half;
  void* to = pack ? half : static_cast<void*>(gradient);
  int64_t n = static_cast<int64_t>(bucket.counts[j]), ranks = comm_.size();
  void* args[] = {&from, &to, &n, &ranks};
  device.launch(pack ? bucket.casts[j]->pack : bucket.casts[j]->unpack, args);
}

void DataParallel::before_micro_batch(GraphRunner& step_runner, int64_t step, bool last) {
  if (!sums_in_runs()) return;
  step_runner.set_hooks(last);
  if (!last) return;
  comm_.meet(fmt::format("the gradient all-reduce of step {}", step));
  step_ = step;
  if (path_ == SumPath::OnDevice)
    result_ = {exchange_->compressed_bytes(), exchange_->options().compression != distributed::Compression::None, true};
}

void DataParallel::before_optimizer(GraphRunner& optimizer, support::Environment& env, int64_t step) {
  if (path_ != SumPath::Staged) return;  // none, or in the graphs
  comm_.meet(fmt::format("the gradient all-reduce of step {}", step));
  optimizer.download_state(accumulators_, env);
  if (shards_optimizer()) {
    std::vector<float> packed = pack_shares(env, accumulators_, /*all=*/true);
    comm_.reduce_scatter(packed.data(), shard_counts_, fmt::format("the gradient sums of step {}", step));
    unpack_shares(packed, env, accumulators_, /*mine=*/true);
    // The global norm's measure: each rank's own sums' squares, added up (in double: one number).
    const std::vector<std::string> mine = owned_by(accumulators_, rank());
    double squares = 0;
    for (const std::string& name : mine)
      for (float x : env.at(name).real) squares += static_cast<double>(x) * x;
    comm_.sum(&squares, 1, distributed::Element::F64);
    env[std::string(ir::names::kAccumulatorSumOfSquares)] = support::HostTensor::scalar(ir::DType::F32, squares);
    optimizer.upload_state(mine, env);
    // (a reduce-scatter of the gradients and an all-gather of the params: a ring all-reduce's two halves' bytes)
    result_ = {exchange_->dense_bytes(), false, std::isfinite(squares)};
    return;
  }
  std::vector<float*> data;
  for (const std::string& name : accumulators_) data.push_back(env.at(name).real.data());
  if (!exchange_->exchanges_momentum(step)) {
    result_ = exchange_->exchange(data, step);
    optimizer.upload_state(accumulators_, env);
    return;
  }
  // 1-bit Adam or LAMB past its warm-up: the momentum travels, and the optimizer takes it as the step's.
  // The variance is frozen: read once a run (or again after a resume).
  optimizer.download_state(momenta_, env);
  if (frozen_variances_.empty()) {
    optimizer.download_state(variances_, env);
    for (const std::string& name : variances_) frozen_variances_.push_back(env.at(name).real);
    // The exchange's warm-up counts the trainer's steps, the optimizer's freeze its own updates:
    // they agree while no step is skipped (loss scaling, which 1-bit refuses). Checked once a run.
    const std::string count(ir::names::kOptimizerStep);
    optimizer.download_state({count}, env);
    if (env.at(count).real.at(0) != static_cast<float>(step - 1))
      throw std::logic_error(fmt::format("1-bit: the optimizer has made {} updates before step {}", env.at(count).real.at(0), step));
  }
  std::vector<float*> momenta;
  for (const std::string& name : momenta_) momenta.push_back(env.at(name).real.data());
  std::vector<const float*> variances;
  for (const std::vector<float>& v : frozen_variances_) variances.push_back(v.data());
  result_ = exchange_->exchange_momentum(data, momenta, variances, 1.0 / static_cast<double>(accumulation_), step);
  optimizer.upload_state(accumulators_, env);
  optimizer.upload_state(momenta_, env);
}

distributed::ExchangeResult DataParallel::end_exchange(int64_t step, bool loss_scaling, double grad_norm) {
  if (path_ == SumPath::None) return {};
  // Sums in device memory stay there: the optimizer's gradient norm, of the summed gradients, tells.
  if (path_ == SumPath::OnDevice) result_.finite = std::isfinite(grad_norm);
  if (!result_.finite && !loss_scaling)
    throw run_folder::Diverged(fmt::format(
        "step {}: the gradients summed over the ranks hold inf or nan{}; without loss scaling no step is skipped: {}",
        step, result_.compressed ? " after compression" : "",
        exchange_->options().compression == distributed::Compression::Fp16
            ? "use gradient_compression = \"bf16\" (fp32's range) or \"none\""
            : step == 1 ? "at step 1 no update has been made: the starting weights give it (see [model] "
                          "initializer_range, or the weights of --init)"
                        : "lower [train] learning_rate or raise warmup_steps"));
  return result_;
}

std::unique_ptr<runtime::DeviceCollective::Watch> DataParallel::watch(int64_t step) {
  if (!device_sums_) return nullptr;
  return device_sums_->watch(fmt::format("step {} (its gradient sums)", step));
}

int DataParallel::agreed_stop(int stop, int64_t step) {
  if (ranks() == 1) return stop;
  for (uint64_t v : comm_.all_gather(static_cast<uint64_t>(stop), fmt::format("the agreement on stopping after step {}", step)))
    stop = std::max(stop, static_cast<int>(v));
  return stop;
}

void DataParallel::reduce(run_folder::StepStats& s) {
  if (ranks() == 1) return;
  double sums[] = {s.loss, s.mlm_loss, s.nsp_loss, double(s.mlm_correct), double(s.mlm_counted), double(s.tokens)};
  comm_.sum(sums, std::size(sums), distributed::Element::F64);
  const double n = ranks();
  s.loss = sums[0] / n, s.mlm_loss = sums[1] / n, s.nsp_loss = sums[2] / n;
  s.mlm_correct = static_cast<int64_t>(sums[3]), s.mlm_counted = static_cast<int64_t>(sums[4]);
  s.tokens = static_cast<int64_t>(sums[5]);
}

void check_same_start(distributed::Communicator& comm, const run_config::Config& config, const std::string& device) {
  if (comm.size() == 1) return;
  const std::vector<int> binaries = differing(comm.all_gather(executable_hash(), "the start-up check that every rank runs the same bertc"));
  if (!binaries.empty())
    throw run_folder::TrainError(fmt::format("rank {} runs another bertc binary than rank 0: install the same build on every "
                                 "machine",
                                 fmt::join(binaries, ", rank ")));
  std::vector<std::pair<std::string, std::string>> settings;  // "[section] key" or "--flag", its value
  for (const auto& spec : run_config::config_keys())
    if (spec.key != "data" && spec.key != "vocab" && spec.key != "dump_ir")
      settings.emplace_back(fmt::format("[{}] {}", spec.section, spec.key), support::value_text(spec.get(config)));
  settings.emplace_back("--device", device);
  auto hash = [](const std::string& s) { return XXH3_64bits(s.data(), s.size()); };
  std::string all;
  for (const auto& [name, value] : settings) all += name + "=" + value + "\n";
  const std::vector<int> runs = differing(comm.all_gather(hash(all), "the start-up check that the ranks' settings agree"));
  if (runs.empty()) return;
  // Which settings differ: one more exchange per setting, only now that some do.
  std::vector<std::string> which;
  for (const auto& [name, value] : settings)
    if (!differing(comm.all_gather(hash(value), "the start-up check that the ranks' settings agree")).empty()) which.push_back(fmt::format("{} (here {})", name, value));
  throw run_folder::TrainError(fmt::format("rank {} has other settings than rank 0 — {} {}: give every rank the same config and "
                               "flags",
                               fmt::join(runs, ", rank "), fmt::join(which, ", "), which.size() == 1 ? "differs" : "differ"));
}

void DataParallel::check_same_run(const std::string& program, const std::string& data, const std::string& device) {
  if (ranks() == 1) return;
  const std::vector<int> devices = differing(comm_.all_gather(XXH3_64bits(device.data(), device.size()), "the start-up check of the ranks' devices"));
  if (!devices.empty())
    throw run_folder::TrainError(fmt::format("rank {} trains on another device than rank 0 (this rank: {}): the ranks would "
                                 "compute other numbers and diverge; give every rank the same --device and GPU model",
                                 fmt::join(devices, ", rank "), device));
  // (the data first: another corpus of as many examples, or another vocabulary of as many
  // tokens, compiles the same program and trains each rank on its own text, with no other sign)
  const std::vector<int> readers = differing(comm_.all_gather(XXH3_64bits(data.data(), data.size()),
                                                                  "the start-up check of the ranks' data"));
  if (!readers.empty())
    throw run_folder::TrainError(fmt::format("rank {} reads other data than rank 0 (this rank: {}): each rank would train on "
                                 "its own text; give every rank the same data and vocabulary (pretraining's "
                                 "corpus or shards, fine-tuning's task files: their place may differ from machine "
                                 "to machine, not their content)",
                                 fmt::join(readers, ", rank "), data));
  const std::vector<int> runs = differing(comm_.all_gather(XXH3_64bits(program.data(), program.size()),
                                                               "the start-up check of the ranks' programs"));
  if (!runs.empty())
    throw run_folder::TrainError(fmt::format("rank {} compiled another program than rank 0 from the same settings and data: "
                                 "give every rank the same bertc build and config",
                                 fmt::join(runs, ", rank ")));
}

void DataParallel::share_state(support::Environment& env, const run_folder::TensorManifest& manifest, int64_t& start) {
  if (ranks() == 1) return;
  comm_.broadcast(&start, sizeof start, 0);
  for (const auto& [name, type] : manifest) {
    auto& t = env.at(name);
    if (t.is_real()) comm_.broadcast(t.real.data(), t.real.size() * sizeof(float), 0);
    else comm_.broadcast(t.integer.data(), t.integer.size() * sizeof(int64_t), 0);
  }
}

// A checkpoint keeps the exchange's state by its names' prefix.
static_assert(std::string_view(distributed::GradientExchange::kStatePrefix).starts_with(run_folder::kExchangeStatePrefix));

support::Environment DataParallel::exchange_state() {
  return exchange_ ? exchange_->saved_state() : support::Environment{};
}

std::string DataParallel::restore_exchange_state(const support::Environment& env) {
  auto saved = [&](const char* prefix) {
    return std::any_of(env.begin(), env.end(), [&](const auto& entry) { return entry.first.starts_with(prefix); });
  };
  const distributed::Compression mine = exchange_ ? exchange_->options().compression : distributed::Compression::None;
  if (mine == distributed::Compression::PowerSgd || mine == distributed::Compression::OneBit) return exchange_->restore_state(env);
  if (!leader()) return "";
  if (saved(distributed::GradientExchange::kStatePrefix))
    return fmt::format("PowerSGD: the checkpoint's PowerSGD state is not used by this run ({}): dropped",
                       ranks() == 1 ? "one rank sums nothing" : "gradient_compression is not powersgd");
  if (saved(distributed::GradientExchange::kOneBitPrefix))
    return "1-bit: the checkpoint's 1-bit error feedback is not used by this run (gradient_compression is not onebit): "
           "dropped";
  return "";
}

void DataParallel::check_same_parameters(const support::Environment& env, const run_folder::TensorManifest& manifest, int64_t step) {
  if (ranks() == 1) return;
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  for (const auto& [name, type] : manifest) {
    if (sharded_state_owner_.contains(name)) continue;  // (ZeRO: only its owner keeps it)
    const auto& t = env.at(name);
    XXH3_64bits_update(state, t.real.data(), t.real.size() * sizeof(float));
    XXH3_64bits_update(state, t.integer.data(), t.integer.size() * sizeof(int64_t));
  }
  const uint64_t mine = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  const std::vector<int> diverged = differing(comm_.all_gather(mine, fmt::format("the check of the ranks' parameters at step {}", step)));
  if (!diverged.empty())
    throw run_folder::TrainError(fmt::format("step {}: the params and moments of rank {} differ from rank 0's: the ranks have "
                                 "diverged (a bug: please report it); --resume from the last checkpoint",
                                 step, fmt::join(diverged, ", rank ")));
}

}  // namespace bertc::train
