// Builds the optimizer graph: average, measure, clip, update, clear.
#include "passes/optimizer.h"

#include <map>
#include <numeric>
#include <string_view>

#include <fmt/format.h>

#include "ir/builder.h"
#include "ir/op_info.h"
#include "ir/value_names.h"
#include "passes/optimizer_shards.h"

namespace bertc::passes {

namespace names = ir::names;

using ir::Builder;
using ir::Tensor;

namespace {

using Settings = std::map<std::string_view, double>;
void add_setting(Settings& out, std::string_view key, double value) { out.emplace(key, value); }
void add_setting(Settings& out, std::string_view key, int64_t value) { out.emplace(key, static_cast<double>(value)); }
template <class T>
void add_setting(Settings&, std::string_view, const T&) {}  // not a float: no attribute takes it

// Every float the optimizer options hold, by its [train] key: an optimizer op's attribute of the
// same name takes it (passes/options.def's keys are the attributes' names: "eps", "beta1", ...).
Settings settings_by_key(const OptimizerOptions& o) {
  Settings out;
#define BERTC_COMPILE_OPTION(...)
#define BERTC_OPTIMIZER_OPTION(member, Type, default_value, check, key, doc) add_setting(out, key, o.member);
#include "passes/options.def"
#undef BERTC_OPTIMIZER_OPTION
#undef BERTC_COMPILE_OPTION
  return out;
}

}  // namespace

bool exempt_from_weight_decay(const std::string& name) {
  for (const char* part : {"bias", "LayerNorm", "layer_norm"})
    if (name.find(part) != std::string::npos) return true;
  return false;
}

Tensor sum_of_squares(Builder& b, Tensor g) {
  std::vector<int64_t> axes(g.rank());
  std::iota(axes.begin(), axes.end(), 0);
  return axes.empty() ? g * g : b.reduce_sum(g * g, axes);
}

ir::Graph build_optimizer_graph(const ir::Graph& step_graph, const OptimizerOptions& o) {
  if (o.gradient_accumulation_steps < 1) throw ir::Error("optimizer: gradient_accumulation_steps must be >= 1");
  Builder b(step_graph.name() + "_optimizer");
  ir::Builder::OpScope scope(b, "optimizer");
  Tensor lr = b.input(std::string(names::kLearningRate), ir::DType::F32, {});
  // Updates done so far, a state so that a skipped step needs no word from the host.
  Tensor done = b.state(std::string(names::kOptimizerStep), {ir::DType::F32, {}});
  const bool scaling = step_graph.find(names::kLossScale).has_value();
  const bool sharded = o.shards > 1;
  if (o.shard < 0 || o.shard >= o.shards)
    throw ir::Error(fmt::format("optimizer: shard {} of {} does not exist", o.shard, o.shards));
  // (an overflow in a shard no other rank sees would skip the update on one rank alone)
  if (sharded && scaling)
    throw ir::Error("optimizer: a ZeRO shard's step with loss scaling is not built: train in fp32 or bf16, or with "
                    "zero_stage = 0");
  Tensor loss_scale = scaling ? b.state(std::string(names::kLossScale), {ir::DType::F32, {}}, 65536.0) : Tensor{};

  struct Slot {
    std::string name;
    Tensor param, acc, grad;
    bool updated = true;  // by this shard (every param without ZeRO)
  };
  std::vector<Slot> slots;
  const std::vector<int> owners = param_owners(step_graph, o.shards);
  for (ir::ValueId p : step_graph.values_of(ir::OpKind::Param)) {
    const ir::Value& v = step_graph.value(p);
    if (!step_graph.find(names::grad_accumulator_of(v.name)))
      throw ir::Error(fmt::format("optimizer: param %{} has no gradient accumulator; run accumulate first", v.name));
    const bool updated = owners[slots.size()] == o.shard;
    // (another shard's param is not this graph's: its memory and state are that rank's)
    slots.push_back({v.name, updated ? b.param(v.name, v.type.shape, v.type.dtype) : Tensor{},
                     b.state(names::grad_accumulator_of(v.name), v.type), {}, updated});
  }
  if (slots.empty()) throw ir::Error("optimizer: the step graph has no params");
  // Mean gradient: the accumulated sum over K micro-batches, unscaled.
  const double k = static_cast<double>(o.gradient_accumulation_steps);
  const std::optional<Tensor> unscale =
      scaling ? std::optional<Tensor>(b.constant(1.0) / (loss_scale * k))
              : (k > 1 ? std::optional<Tensor>(b.constant(1.0 / k)) : std::nullopt);
  Tensor total_sq;
  for (size_t i = 0; i < slots.size(); ++i) {
    Slot& s = slots[i];
    if (!s.updated) continue;  // (another shard's: read by nothing here but its zeroing)
    s.grad = unscale ? s.acc * *unscale : s.acc;
    if (sharded) continue;
    const Tensor sq = sum_of_squares(b, s.grad);
    total_sq = i == 0 ? sq : total_sq + sq;
  }
  if (sharded) {
    // A shard holds the sums of its own params' gradients alone: the ranks add their squares up
    // on the host (distributed/'s exchange), and the norm is the same on every rank.
    total_sq = b.input(std::string(names::kAccumulatorSumOfSquares), ir::DType::F32, {});
    if (unscale) total_sq = total_sq * (*unscale * *unscale);
  }
  const Tensor norm = b.name(sqrt(total_sq), std::string(names::kGradNorm));
  std::optional<Tensor> clip;
  if (o.max_grad_norm > 0) {
    // torch.nn.utils.clip_grad_norm_'s factor: max_norm / (norm + 1e-6), at most 1.
    clip = b.op(ir::OpKind::Minimum, {b.constant(1.0), b.constant(o.max_grad_norm) / (norm + 1e-6)});
  }
  // With loss scaling, an overflow anywhere skips the whole update (params and moments keep
  // their values) and halves the scale; 2000 clean steps in a row double it.
  std::optional<Tensor> finite;
  if (scaling) {
    std::vector<Tensor> accs;
    for (const Slot& s : slots) accs.push_back(s.acc);
    finite = b.op(ir::OpKind::AllFinite, accs);
  }
  auto keep_if_overflow = [&](Tensor next, Tensor old) { return finite ? b.op(ir::OpKind::Where, {*finite, next, old}) : next; };
  const Tensor count = done + 1.0;
  const Tensor step = b.cast(count, ir::DType::I64);
  const ir::OpKind kind = o.optimizer.kind;
  // The state the optimizer declares (ir/ops.def: its operands between grad and lr), and the
  // hyperparameters it declares, each from the [train] key of its name.
  const std::vector<std::string> state_names = ir::optimizer_states(kind);
  const Settings settings = settings_by_key(o);
  for (const ir::AttrSpec& a : ir::op_info(kind).attrs)
    if (!settings.contains(a.name))
      throw ir::Error(fmt::format("optimizer: {} takes '{}', which no [train] key gives: add the key '{}' to "
                                  "passes/options.def",
                                  ir::op_info(kind).name, a.name, a.name));
  for (const Slot& s : slots) {
    if (!s.updated) {
      b.update(s.acc, b.broadcast(b.constant(0.0, s.acc.type().dtype), s.acc.type().shape));
      continue;
    }
    const ir::TensorType type = s.param.type();
    std::vector<Tensor> states;
    for (const std::string& state : state_names) states.push_back(b.state(names::optimizer_state_of(s.name, state), type));
    std::vector<Tensor> operands{s.param, clip ? s.grad * *clip : s.grad};
    operands.insert(operands.end(), states.begin(), states.end());
    operands.insert(operands.end(), {lr, step});
    std::vector<ir::NamedAttr> attrs;
    for (const ir::AttrSpec& a : ir::op_info(kind).attrs)
      attrs.push_back({std::string(a.name), a.name == "weight_decay" ? (exempt_from_weight_decay(s.name) ? 0.0 : o.weight_decay)
                                                                    : settings.at(a.name)});
    auto next = b.ops(kind, operands, std::move(attrs));
    b.update(s.param, keep_if_overflow(next[0], s.param));
    for (size_t i = 0; i < states.size(); ++i) b.update(states[i], keep_if_overflow(next[1 + i], states[i]));
    b.update(s.acc, b.broadcast(b.constant(0.0, type.dtype), type.shape));
  }
  b.update(done, keep_if_overflow(count, done));
  b.output(norm, std::string(names::kGradNorm));
  if (scaling) {
    Tensor good = b.state(std::string(names::kLossScaleGoodSteps), {ir::DType::F32, {}});
    const Tensor good_next = b.op(ir::OpKind::Where, {*finite, good + 1.0, b.constant(0.0)});
    const Tensor grow = b.op(ir::OpKind::Maximum, {good_next + -1999.0, b.constant(0.0)});  // > 0 at 2000
    const Tensor scale_next =
        b.op(ir::OpKind::Where, {*finite, b.op(ir::OpKind::Where, {grow, loss_scale * 2.0, loss_scale}), loss_scale * 0.5});
    b.update(good, b.op(ir::OpKind::Where, {grow, b.constant(0.0), good_next}));
    b.update(loss_scale, scale_next);
    b.output(1.0 - *finite, std::string(names::kStepSkipped));
    b.output(loss_scale + 0.0, std::string(names::kLossScaleUsed));
  }
  return std::move(b).finish();
}

bool is_optimizer_graph(const ir::Graph& graph) {
  const std::optional<ir::ValueId> step = graph.find(names::kOptimizerStep);
  return step && graph.producer(*step).kind == ir::OpKind::State;
}

}  // namespace bertc::passes
