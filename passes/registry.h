// The pass registry: every pass by name, in pipeline order, with the options it reads. bertc-opt
// runs passes from it (--passes='precision{mode=bf16},recompute{policy=auto budget=1400000000},
// fusion') and compile_training (pipeline.h) runs the same entries in the same order, so that each
// stage of the pipeline is one bertc-opt invocation on the stage before.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/enum_names.h"
#include "ir/graph.h"
#include "passes/options.h"
#include "passes/recompute.h"

namespace bertc::passes {

// The options passes run with. A pass reads those options.def names it as the pass of.
struct PassOptions {
  CompileOptions compile;      // resolved in the pipeline
  OptimizerOptions optimizer;
};

// A pass's view of the run: its options, and what it reports back for the caller.
struct PassContext {
  PassOptions options;
  RecomputeResult recompute;  // the recompute pass's choice
};

// Which graphs of the training pipeline a pass runs on.
enum class PipelineGraphs {
  None,            // not in the pipeline (bertc-opt only): verify, dce, memory-plan
  Step,            // the graph that becomes the step graph: forward, then forward + backward
  MakesOptimizer,  // makes the optimizer graph from the step graph
  StepAndOptimizer,  // the step graph, then the optimizer graph
  Optimizer,       // the optimizer graph
};
BERTC_ENUM_NAMES(PipelineGraphs, {PipelineGraphs::None, "bertc-opt only"}, {PipelineGraphs::Step, "step"},
                 {PipelineGraphs::MakesOptimizer, "step -> optimizer"},
                 {PipelineGraphs::StepAndOptimizer, "step, optimizer"}, {PipelineGraphs::Optimizer, "optimizer"})

struct PassInfo {
  std::string_view name;
  std::string_view summary;
  PipelineGraphs graphs;
  // Whether compile_evaluation runs it too: on a forward graph with no backward (a fine-tuning
  // run's dev-set evaluation), in the same order.
  bool on_evaluation_graph;
  bool (*enabled)(const PassOptions&);  // whether the pipeline runs it (null: always)
  // Transforms `graph` (MakesOptimizer: replaces the step graph by its optimizer graph).
  void (*run)(ir::Graph& graph, PassContext& context);
};

// In pipeline order; the passes outside the pipeline first.
std::span<const PassInfo> registered_passes();
// nullptr when no pass has that name.
const PassInfo* find_pass(std::string_view name);

// One element of a pipeline: a pass and the options it runs with (those it reads set as written,
// the rest at their defaults).
struct PassInvocation {
  const PassInfo* pass = nullptr;
  PassOptions options;
};

// A pipeline as MLIR writes one: passes separated by commas, each with its options in braces as
// space-separated key=value pairs: "precision{mode=bf16},recompute{policy=auto budget=14},fusion".
// Throws ir::Error naming the place (a column of `text`) and the fix: an unknown pass or key, a
// value of the wrong type or out of range, an unbalanced brace.
std::vector<PassInvocation> parse_pipeline(std::string_view text);

// The pass with every option it reads, as parse_pipeline takes it: "recompute{policy=none budget=0}".
std::string invocation_text(const PassInfo& pass, const PassOptions& options);

// The pass options of `pass`, one line each ("  mode  precision: fp32, fp16, ..."), for help.
std::string pass_options_help(const PassInfo& pass);

// The pass table (every registered pass: name, graphs, what it does, its options) and the
// [compile] option table (key, flag, values, default, what it sets, the passes reading it) as
// Markdown, as the docs show them: `bertc-opt --tables` prints them, and
// tests/docs/check_generated_tables.py holds the docs to its output.
std::string markdown_tables();

}  // namespace bertc::passes
