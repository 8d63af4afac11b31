// The training pipeline: the registry's passes (registry.h) in its order, each followed by the
// verifier:
//   forward graph: attention (when fused_attention), precision
//   -> autodiff -> accumulate: the step graph (one micro-batch: forward, backward, accumulation)
//   -> optimizer: the optimizer graph (one optimizer step), made from the step graph
//   -> recompute (step) -> fusion (step, optimizer; when fusion) -> schedule (step, optimizer).
// Precision and attention come before autodiff: autodiff then derives the mixed-precision
// backward and attention's own backward with no further pass. Every stage is one bertc-opt
// invocation on the stage before (--dump-ir writes each with the command that replays it).
#pragma once

#include <filesystem>
#include <functional>
#include <set>
#include <string_view>

#include "ir/graph.h"
#include "passes/options.h"
#include "passes/recompute.h"

namespace bertc::passes {

struct TrainingProgram {
  ir::Graph step;       // run once per micro-batch
  ir::Graph optimizer;  // run once per optimizer step
  RecomputeResult recompute;  // what the recompute pass applied ("auto: full on 3 of 12 layers", ...)
};

// Sees the graph after every stage: "frontend" (the forward graph as built), then each pass.
using AfterStage = std::function<void(std::string_view stage, const ir::Graph& graph)>;

// `options` must be resolved (resolve_options in options.h). print_ir_after_all and dump_ir act
// here; `after_stage`, when given, sees every stage too (the compile report).
TrainingProgram compile_training(ir::Graph forward, const CompileOptions& options, const OptimizerOptions& optimizer,
                                 const AfterStage& after_stage = {});

// The optimizer graph alone, made from a compiled step graph (compile_training's `step`: its params
// and accumulators are those the optimizer pass reads before the step's later passes) with the
// optimizer's passes after it, each verified: a ZeRO shard's (optimizer.shard of .shards), whose
// step graph is every rank's. Not a stage of --dump-ir or print_ir_after_all (those show the whole
// program's optimizer graph, of which a shard's is the part named in optimizer_shards.h).
ir::Graph compile_optimizer(const ir::Graph& step, const CompileOptions& options, const OptimizerOptions& optimizer);

// A forward graph compiled for evaluation (no backward, no optimizer): the pipeline's passes that
// run on such a graph (PassInfo::on_evaluation_graph: attention, precision, fusion, schedule), in
// its order, each verified. What a fine-tuning run's dev-set evaluation runs on a device.
ir::Graph compile_evaluation(ir::Graph forward, const CompileOptions& options);

// An earlier dump in --dump-ir `folder`, before a dump into it: a whole program's stages (at the top)
// and the folders seq-N of fine-tuning's per-bucket dumps whose length is not in `kept_buckets`
// lose their stages as a dump into them would (the rest stays: a bucket folder left empty goes),
// so that the folder describes only what this run compiled. Fine-tuning keeps its own buckets'
// folders (each bucket's dump then clears its own); a whole program's dump keeps none.
// Throws std::runtime_error, removing nothing of that folder, where one holds a stage no dump wrote.
void remove_earlier_dumps(const std::filesystem::path& folder, const std::set<int64_t>& kept_buckets);

}  // namespace bertc::passes
