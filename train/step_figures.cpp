// Model FLOPs and GPU peaks (see step_figures.h).
#include "train/step_figures.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "passes/cost_model.h"
#include "passes/precision.h"
#include "passes/targets.h"
#include "data/row_batch.h"
#include "data/row_packing.h"
#include "data/stop_check.h"
#include "train/batches.h"

namespace bertc::train {

double peak_flops(int sm, passes::Precision precision) {
  const std::optional<passes::GpuSpec> gpu = passes::gpu_of_sm(sm);
  if (!gpu) return 0;
  return passes::matrix_peak(*gpu, passes::activation_dtype(precision), precision);
}

double model_flops_per_step(const frontend::ModelDefinition& model, const run_config::Config& config,
                            const passes::TrainingProgram& program, const passes::RowFractions& rows) {
  passes::TrainingProgram without_recompute;
  const passes::TrainingProgram* counted = &program;
  // (A compiled program's figures are not in its file: its recompute option says whether it may
  // have recomputed, and then the program without is counted.)
  if (program.recompute.dropped_values > 0 || config.compile.recompute != passes::RecomputePolicy::None) {
    passes::CompileOptions options = config.compile;
    options.recompute = passes::RecomputePolicy::None;
    options.dump_ir.clear();
    without_recompute = passes::compile_training(frontend::build_model(model, config.model_settings()), options, config.train);
    counted = &without_recompute;
  }
  double flops = 0;
  for (const ir::Op& op : counted->step.ops())
    flops += static_cast<double>(passes::launch_cost(counted->step, op, std::nullopt, config.compile.precision, rows).flops);
  return flops * static_cast<double>(config.train.gradient_accumulation_steps);
}

passes::RowFractions row_fractions(const run_config::Config& config, const data::ExampleSource& source) {
  if (config.train.examples_per_row() == 0) return {};
  const int64_t S = config.train.seq_len;
  const data::RowWork w = data::sampled_row_work(source, S, kCountedTile, kSampledRows);
  const auto positions = static_cast<double>(w.rows * S), square = positions * static_cast<double>(S);
  return {S, static_cast<double>(w.tokens) / positions, static_cast<double>(w.example_scores) / square,
          static_cast<double>(w.tile_scores) / square, static_cast<double>(w.examples) / static_cast<double>(w.rows)};
}

namespace {

// The share of the positions the sampled rows' examples would fill in rows of up to `most`
// examples (placed afresh by data::pack_rows, each row's masked positions as [train] gives `most`).
double fill_with(const run_config::Config& config, const data::ExampleSource& source, int64_t most) {
  run_config::TrainConfig t = config.train;
  t.packing_max_examples = most;
  std::vector<data::ExampleSize> sizes;
  int64_t tokens = 0;
  for (int64_t i = 0; i < std::min(source.size(), kSampledRows); ++i)
    for (const data::Example& e : source.row(i)) {
      sizes.push_back({static_cast<int64_t>(e.tokens.size()), static_cast<int64_t>(e.masked_positions.size())});
      tokens += sizes.back().tokens;
    }
  const auto rows = data::pack_rows(sizes, {t.seq_len, t.row_predictions(), most}).size();
  return static_cast<double>(tokens) / static_cast<double>(static_cast<int64_t>(rows) * t.seq_len);
}

// A line advising more examples a row where that fills the rows' padding (2 points or more of the
// positions, on the sample), else "".
std::string more_examples_advice(const run_config::Config& config, const data::ExampleSource& source, double fill) {
  const int64_t K = config.train.packing_max_examples, most = std::min(2 * K, config.train.seq_len / 5);
  if (most <= K || fill > 0.98) return "";
  const double more = fill_with(config, source, most);
  if (more < fill + 0.02) return "";
  return fmt::format("rows: {:.1f}% of the positions are padding; in rows of up to {} examples {:.1f}% of the positions "
                     "would be tokens (the same sample placed again): set [train] packing_max_examples = {} for more "
                     "examples a step\n",
                     100 * (1 - fill), most, 100 * more, most);
}

}  // namespace

passes::RowFractions config_row_fractions(const run_config::Config& config, std::ostream& log) {
  if (config.train.examples_per_row() == 0) return {};
  const std::string unmeasured =
      "an attention over rows is counted over its whole square (what one example a row computes: an upper bound) "
      "and no figure of real tokens is given";
  if (config.train.data.empty() || config.train.vocab.empty()) {
    log << fmt::format("rows: not measured: [train] packing = \"pack\" and no [train] {} to measure the rows on: {}; "
                       "set them in the config for the figures\n",
                       config.train.data.empty() ? "data" : "vocab", unmeasured);
    return {};
  }
  // (said first: what reading the data says next is then read as part of this measurement)
  log << fmt::format("rows: [train] packing = \"pack\": an attention over rows computes what the examples leave, so "
                     "its cost is measured on {} rows of [train] data\n",
                     kSampledRows);
  try {
    const data::Vocab vocab = load_run_vocab(config, config.resolve(config.train.vocab), log);
    const auto source = open_example_source(config, config.resolve(config.train.data), vocab, log);
    const passes::RowFractions f = row_fractions(config, *source);
    log << fmt::format("rows: {:.1f}% of the positions are tokens; attention: {:.1f}% of the scores within examples, "
                       "{:.1f}% in the {}x{} tiles computed\n",
                       100 * f.tokens, 100 * f.scores, 100 * f.tiles, kCountedTile, kCountedTile);
    log << more_examples_advice(config, *source, f.tokens);
    return f;
  } catch (const data::Stopped&) {
    throw;  // (a signal: the command stops)
  } catch (const std::exception& e) {
    log << fmt::format("rows: not measured: {}: {}; for the figures, set [train] data and vocab in the config to the "
                       "data the run will train on (compile and estimate read the config's, and take no --data)\n",
                       e.what(), unmeasured);
    return {};
  }
}

}  // namespace bertc::train
