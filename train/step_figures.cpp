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
#include "data/shard_examples.h"
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

namespace {

using SampledRows = std::vector<std::vector<data::ExampleSize>>;

// The work of `rows` at `seq_len` on tiles of `tile_q` queries and `tile_k` keys.
data::RowWork work_of(const SampledRows& rows, int64_t seq_len, int64_t tile_q, int64_t tile_k) {
  data::RowWork sum;
  std::vector<int64_t> lengths;
  for (const auto& row : rows) {
    lengths.clear();
    for (const data::ExampleSize& e : row) lengths.push_back(e.tokens);
    sum += data::row_work(lengths, seq_len, tile_q, tile_k);
  }
  return sum;
}

// `part` of `rows` rows' positions (or of their squares).
double share(int64_t part, int64_t rows, int64_t per_row) {
  return static_cast<double>(part) / (static_cast<double>(rows) * static_cast<double>(per_row));
}

// The cost model's fractions of `rows` (at kCountedTile square tiles); not measured where there are none.
passes::RowFractions fractions_of(const SampledRows& rows, int64_t S) {
  const data::RowWork w = work_of(rows, S, kCountedTile, kCountedTile);
  if (w.rows == 0) return {};
  return {S, share(w.tokens, w.rows, S), share(w.example_scores, w.rows, S * S), share(w.tile_scores, w.rows, S * S),
          static_cast<double>(w.examples) / static_cast<double>(w.rows)};
}

// The share of the positions the sampled rows' examples would fill in rows of up to `most`
// examples (placed afresh by data::pack_rows, each row's masked positions as [train] gives `most`).
double fill_with(const run_config::Config& config, const SampledRows& rows, int64_t most) {
  run_config::Config more = config;
  more.train.packing_max_examples = most;
  std::vector<data::ExampleSize> sizes;
  int64_t tokens = 0;
  for (const auto& row : rows)
    for (const data::ExampleSize& e : row) sizes.push_back(e), tokens += e.tokens;
  const auto placed = static_cast<int64_t>(data::pack_rows(sizes, *row_capacity(more)).size());
  return share(tokens, placed, config.train.seq_len);
}

// A line advising more examples a row where that fills the rows' padding (2 points or more of the
// positions, on the sample), else "".
std::string more_examples_advice(const run_config::Config& config, const SampledRows& rows, double fill) {
  const int64_t K = config.train.packing_max_examples, most = std::min(2 * K, config.train.seq_len / 5);
  if (most <= K || fill > 0.98) return "";
  const double more = fill_with(config, rows, most);
  if (more < fill + 0.02) return "";
  return fmt::format("rows: {:.1f}% of the positions are padding; in rows of up to {} examples {:.1f}% of the positions "
                     "would be tokens (the same sample placed again): set [train] packing_max_examples = {} for more "
                     "examples a step\n",
                     100 * (1 - fill), most, 100 * more, most);
}

// What the measurement says: the fractions, and the tiles of the kernels' other shapes.
std::string measured_text(const SampledRows& rows, const passes::RowFractions& f) {
  const int64_t S = f.seq_len;
  const auto tiles = [&](int64_t q, int64_t k) { return 100 * share(work_of(rows, S, q, k).tile_scores, rows.size(), S * S); };
  return fmt::format("rows: measured on {} rows: {:.2f} examples a row, {:.1f}% of the positions tokens; attention: "
                     "{:.1f}% of the scores within examples, {:.1f}% in the {}x{} tiles computed (counted; the 16-bit "
                     "tensor cores' 64x32 forward tiles {:.1f}%, the SIMT backward's 16x16 {:.1f}%)\n",
                     rows.size(), f.examples, 100 * f.tokens, 100 * f.scores, 100 * f.tiles, kCountedTile, kCountedTile,
                     tiles(64, 32), tiles(16, 16));
}

}  // namespace

passes::RowFractions row_fractions(const run_config::Config& config, const data::ExampleSource& source) {
  if (config.train.examples_per_row() == 0) return {};
  return fractions_of(data::sampled_rows(source, kSampledRows), config.train.seq_len);
}

passes::RowFractions row_fractions(const data::Batch& batch) {
  const int64_t K = batch.examples_per_row, S = batch.seq_len;
  if (K == 0) return {};
  SampledRows rows;
  for (int64_t r = 0; r < batch.batch_size; ++r) {
    std::vector<int64_t> count(static_cast<size_t>(K), 0);
    for (int64_t i = 0; i < S; ++i)
      if (const int64_t id = batch.example_ids[static_cast<size_t>(r * S + i)]; id >= 0 && id < K) ++count[id];
    std::vector<data::ExampleSize>& row = rows.emplace_back();
    for (const int64_t n : count)
      if (n > 0) row.push_back({n, 0});
  }
  return fractions_of(rows, S);
}

passes::RowFractions config_row_fractions(const run_config::Config& config, std::ostream& log) {
  const std::optional<data::RowCapacity> capacity = row_capacity(config);
  if (!capacity) return {};
  const std::string unmeasured =
      "an attention over rows is counted over its whole square (what one example a row computes: an upper bound) "
      "and no figure of real tokens is given";
  if (config.train.data.empty() || config.train.vocab.empty()) {
    log << fmt::format("rows: not measured: [train] packing = \"pack\" and no [train] {} to measure the rows on: {}; "
                       "set it in the config for the figures\n",
                       config.train.data.empty() && config.train.vocab.empty() ? "data and vocab"
                       : config.train.data.empty()                             ? "data"
                                                                               : "vocab",
                       unmeasured);
    return {};
  }
  // (said first: what reading the data says next is then read as part of this measurement)
  log << fmt::format("rows: [train] packing = \"pack\": an attention over rows computes what the examples leave, so "
                     "its cost is measured on up to {} rows of the first shard of [train] data\n",
                     kSampledRows);
  try {
    const data::Vocab vocab = load_run_vocab(config, config.resolve(config.train.vocab), log, /*vocab_flag=*/false);
    const OpenedShards shards = open_shard_set(config, config.resolve(config.train.data), vocab, log);
    const SampledRows rows = data::first_shard_rows(*shards.set, *capacity, kSampledRows);
    const passes::RowFractions f = fractions_of(rows, config.train.seq_len);
    if (!f.measured()) throw data::DataError("its first shard holds no examples");
    log << measured_text(rows, f) << more_examples_advice(config, rows, f.tokens);
    return f;
  } catch (const data::Stopped&) {
    throw;  // (a signal: the command stops)
  } catch (const std::runtime_error& e) {  // (the data's faults, DataError among them: a bug propagates)
    log << fmt::format("rows: not measured: {}: {}; for the figures, set [train] data and vocab in the config to the "
                       "data the run will train on (compile and estimate read the config's, and take no --data)\n",
                       e.what(), unmeasured);
    return {};
  }
}

}  // namespace bertc::train
