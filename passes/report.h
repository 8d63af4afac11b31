// The compile report: per stage of the pipeline, what the graphs cost, and the planned memory and
// a roofline estimate of one training step for the target GPU.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/cost_model.h"
#include "passes/memory_plan.h"
#include "passes/pipeline.h"
#include "passes/targets.h"

namespace bertc::passes {

struct GraphFigures {
  int64_t ops = 0, fused_kernels = 0, launches = 0;
  int64_t flops_forward = 0, flops_backward = 0, flops_recompute = 0, flops_optimizer = 0;  // as computed
  int64_t flops_attention_over_rows = 0;  // the attentions over rows among them (blocks), over their whole square
  int64_t bytes = 0;       // read and written by all launches
  double seconds = 0;      // roofline time of all launches (0 without a GPU)
  int64_t flops() const { return flops_forward + flops_backward + flops_recompute + flops_optimizer; }
};

GraphFigures graph_figures(const ir::Graph& graph, const std::optional<GpuSpec>& gpu, Precision precision,
                           const RowFractions& rows = {});

struct StageFigures {
  std::string pass;
  std::string graph;  // "step" (one micro-batch) or "optimizer"
  GraphFigures figures;
};

struct CompileReport {
  CompileOptions options;            // resolved
  std::string recompute;             // the policy applied (auto names its choice)
  std::optional<GpuSpec> gpu;
  int64_t micro_batches = 1;         // gradient accumulation steps
  int64_t sequences_per_step = 0;
  std::vector<StageFigures> stages;
  GraphFigures step, optimizer;      // the final graphs
  MemoryPlan step_memory, optimizer_memory;
  int64_t launches_before_fusion = 0, launches_per_step = 0;  // per optimizer step
  int64_t flops_per_step = 0, bytes_per_step = 0;
  double step_seconds = 0, sequences_per_second = 0;  // roofline estimate (0 without a GPU)
  double seconds_to_compile = 0;     // all passes and planning, measured here
  // What the data's rows leave to compute (measured: [train] packing = "pack", the attention fused
  // over rows; else not), and the FLOPs of the step graphs' micro-batches had each example run
  // alone at its own length: their attentions over rows at rows.scores of the square, the rest at
  // rows.tokens of the positions (the optimizer's FLOPs aside: they do not scale with tokens; nor
  // do the MLM head's, over a row's fixed masked positions, which this counts as scaling: the ratio
  // is a little low for it); 0 where rows are not measured.
  RowFractions rows;
  double real_token_flops = 0;
  double real_tokens_per_step() const {
    return static_cast<double>(sequences_per_step * rows.seq_len) * rows.tokens;
  }
  // The step graphs' FLOPs (the optimizer's aside) over the real tokens' own: 1 computes no more.
  double real_token_flops_ratio() const {
    return real_token_flops > 0 ? static_cast<double>(flops_per_step - optimizer.flops()) / real_token_flops : 0;
  }
  // Where the plan does not fit its GPU and a caller could build the model again: the device bytes
  // of the same model at batch_size 1 with recompute full, the least the memory warning's fixes
  // reach (the model at another batch size is the frontend's to build, not the passes').
  std::optional<int64_t> smallest_device_bytes;

  // The device memory the plan takes: the larger of the step's and the optimizer's arenas (they run
  // one after the other, in one arena), the parameters, the optimizer state and one batch.
  int64_t device_bytes() const {
    return std::max(step_memory.arena_bytes, optimizer_memory.arena_bytes) + step_memory.param_bytes +
           optimizer_memory.state_bytes + step_memory.input_bytes;
  }
  // Per param of the step graph (its order): elements, and the bytes of its optimizer state
  // (optimizer_shards.h's state_owners): what [train] zero_stage = 1 splits.
  std::vector<int64_t> param_elements, param_state_bytes;
  // device_bytes() on the rank keeping the most optimizer state when zero_stage = 1 splits it over
  // `ranks` ranks (every rank keeps the params, the gradient accumulators and its arena; an
  // optimizer arena that would shrink with its shard is counted whole).
  int64_t device_bytes_with_zero1(int ranks) const;
};

// Compiles the training program (options resolved; micro-batches of `batch_size` sequences) and
// reports on it, an attention over rows counted at `rows` (cost_model.h); `program` receives the
// compiled graphs when given.
CompileReport compile_report(const ir::Graph& forward, const CompileOptions& options, const OptimizerOptions& optimizer,
                             int64_t batch_size, TrainingProgram* program = nullptr, const RowFractions& rows = {});

}  // namespace bertc::passes
