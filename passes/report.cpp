// Gathering the compile report while the pipeline runs.
#include "passes/report.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "ir/stats.h"
#include "passes/annotate_costs.h"
#include "passes/cost_model.h"
#include "passes/optimizer_shards.h"

namespace bertc::passes {
namespace {

// Forward, backward, recompute or optimizer, from the scope autodiff and recompute give ops.
int64_t& bucket(GraphFigures& f, const std::string& scope, bool optimizer_graph) {
  if (optimizer_graph) return f.flops_optimizer;
  if (scope.starts_with("backward")) return f.flops_backward;
  if (scope.starts_with("recompute")) return f.flops_recompute;
  return f.flops_forward;
}

void add_flops(const ir::Graph& g, const ir::Op& op, GraphFigures& f, bool optimizer_graph, const RowFractions& rows) {
  if (op.kind == ir::OpKind::Fused) {
    for (const ir::Op& inner : op.region.graph().ops()) add_flops(op.region.graph(), inner, f, optimizer_graph, rows);
    return;
  }
  bucket(f, op.scope, optimizer_graph) += counted_flops(g, op, rows, &f.flops_attention_over_rows);
}

}  // namespace

GraphFigures graph_figures(const ir::Graph& g, const std::optional<GpuSpec>& gpu, Precision precision,
                           const RowFractions& rows) {
  GraphFigures f;
  const bool optimizer_graph = g.name().ends_with("_optimizer");
  for (const ir::Op& op : g.ops()) {
    ++f.ops;
    const LaunchCost c = launch_cost(g, op, gpu, precision, rows);
    if (!c.launch) continue;
    ++f.launches;
    f.fused_kernels += op.kind == ir::OpKind::Fused;
    f.bytes += c.bytes;
    f.seconds += c.seconds;
    add_flops(g, op, f, optimizer_graph, rows);
  }
  return f;
}

CompileReport compile_report(const ir::Graph& forward, const CompileOptions& options, const OptimizerOptions& optimizer,
                             int64_t batch_size, TrainingProgram* program, const RowFractions& rows) {
  CompileReport r;
  r.options = options;
  r.gpu = options.arch.gpu();
  r.micro_batches = optimizer.gradient_accumulation_steps;
  r.sequences_per_step = batch_size * r.micro_batches;
  const Precision precision = options.precision;
  int64_t step_before = 0, optimizer_before = 0;
  const auto started = std::chrono::steady_clock::now();
  TrainingProgram p = compile_training(forward, options, optimizer, [&](std::string_view pass, const ir::Graph& g) {
    const bool opt = g.name().ends_with("_optimizer");
    StageFigures s{std::string(pass), opt ? "optimizer" : "step", graph_figures(g, r.gpu, precision, rows)};
    // Launches before fusion: those of the last stage whose graph held no fused kernel yet.
    if (s.figures.fused_kernels == 0) (opt ? optimizer_before : step_before) = s.figures.launches;
    r.stages.push_back(std::move(s));
  });
  r.recompute = p.recompute.policy;
  annotate_costs(p.step, r.gpu, precision);
  annotate_costs(p.optimizer, r.gpu, precision);
  r.step_memory = plan_memory(p.step);
  r.optimizer_memory = plan_memory(p.optimizer);
  r.seconds_to_compile = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  r.step = graph_figures(p.step, r.gpu, precision, rows);
  r.optimizer = graph_figures(p.optimizer, r.gpu, precision);
  const int64_t k = r.micro_batches;
  r.launches_before_fusion = k * step_before + optimizer_before;
  r.launches_per_step = k * r.step.launches + r.optimizer.launches;
  r.flops_per_step = k * r.step.flops() + r.optimizer.flops();
  r.bytes_per_step = k * r.step.bytes + r.optimizer.bytes;
  r.step_seconds = static_cast<double>(k) * r.step.seconds + r.optimizer.seconds;
  // (rows measured of a step without an attention over rows — fused attention off — count nothing:
  // its attention is a product over the whole square, and the report says no rows figure)
  if (rows.measured() && r.step.flops_attention_over_rows > 0) {
    r.rows = rows;
    const GraphFigures whole = graph_figures(p.step, std::nullopt, precision);  // (every square whole)
    const auto attention = static_cast<double>(whole.flops_attention_over_rows);
    const double rest = static_cast<double>(whole.flops()) - attention;
    r.real_token_flops = static_cast<double>(k) * (rest * rows.tokens + attention * rows.scores);
  }
  if (r.step_seconds > 0) r.sequences_per_second = static_cast<double>(r.sequences_per_step) / r.step_seconds;
  for (ir::ValueId v : p.step.values_of(ir::OpKind::Param)) {
    r.param_elements.push_back(p.step.value(v).type.numel());
    r.param_state_bytes.push_back(0);
  }
  for (const auto& [name, param] : state_params(p.step, p.optimizer))
    r.param_state_bytes[param] += p.optimizer.value(*p.optimizer.find(name)).type.bytes();
  if (program) *program = std::move(p);
  return r;
}

int64_t CompileReport::device_bytes_with_zero1(int ranks) const {
  const std::vector<int> owners = shard_owners(param_elements, ranks);
  std::vector<int64_t> kept(static_cast<size_t>(ranks), 0);
  int64_t all = 0;
  for (size_t i = 0; i < owners.size(); ++i) {
    kept[static_cast<size_t>(owners[i])] += param_state_bytes[i];
    all += param_state_bytes[i];
  }
  return device_bytes() - all + *std::max_element(kept.begin(), kept.end());
}

}  // namespace bertc::passes
