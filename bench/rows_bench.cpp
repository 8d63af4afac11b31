// How much of a batch is padding, and how much packing whole examples into rows would take back
// (issue 39): the examples of one epoch of a config's data, made as training makes them, at each
// sequence length asked, placed one a row (today) and into rows of up to K examples by
// data/row_packing's best fit, in windows of a shard's size. Prints the rows each way and their
// real tokens: the ratio of rows is the samples a step need not compute (the figure NVIDIA's
// MLPerf BERT states for its packing), an upper bound of the speed-up at a row's cost.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <span>
#include <sstream>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "data/row_packing.h"
#include "run_config/config.h"
#include "train/batches.h"

namespace {

using bertc::data::ExampleSize;

// The sizes of one epoch of `config`'s examples at `seq_len`.
std::vector<ExampleSize> epoch_sizes(bertc::run_config::Config config, int64_t seq_len) {
  config.train.seq_len = seq_len;
  config.train.packing = bertc::run_config::Packing::None;  // (the examples themselves: this places them)
  std::ostringstream quiet;  // (the data lines training prints)
  const bertc::data::Vocab vocab = bertc::train::load_run_vocab(config, config.resolve(config.train.vocab), quiet);
  const auto source = bertc::train::open_example_source(config, config.resolve(config.train.data), vocab, quiet);
  std::vector<ExampleSize> sizes;
  sizes.reserve(static_cast<size_t>(source->size()));
  for (int64_t i = 0; i < source->size(); ++i) {
    const bertc::data::Example e = source->example(i);
    sizes.push_back({static_cast<int64_t>(e.tokens.size()), static_cast<int64_t>(e.masked_positions.size())});
  }
  return sizes;
}

// Rows for `sizes` packed `window` examples at a time (as a shard at a time would be).
size_t packed_rows(const std::vector<ExampleSize>& sizes, const bertc::data::RowCapacity& capacity, size_t window) {
  size_t rows = 0;
  for (size_t first = 0; first < sizes.size(); first += window) {
    const size_t n = std::min(window, sizes.size() - first);
    rows += bertc::data::pack_rows(std::span(sizes).subspan(first, n), capacity).size();
  }
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Padding in a config's batches, and the rows packing whole examples would take");
  std::string config_path;
  std::vector<int64_t> seq_lens;
  int64_t most_examples = 3;
  size_t window = 4096;
  app.add_option("config", config_path, "A pretraining config (its [train] data and vocab)")->required();
  app.add_option("--seq-len", seq_lens, "Sequence lengths to make the examples at (default: the config's, and 512)");
  app.add_option("--most-examples", most_examples, "Examples a row holds at most (K)")->check(CLI::PositiveNumber);
  app.add_option("--window", window, "Examples packed together (a shard's worth)")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    const bertc::run_config::Config config = bertc::run_config::load_config(config_path);
    if (seq_lens.empty()) seq_lens = {config.train.seq_len, 512};
    std::cout << fmt::format("{}: one epoch of its examples; rows of up to {} examples packed {} at a time (best "
                             "fit, data/row_packing)\n",
                             config_path, most_examples, window);
    std::cout << "seq_len  examples  mean tokens  real tokens one a row  rows packed  real tokens packed  "
                 "examples a row (rows saved)\n";
    for (const int64_t seq_len : seq_lens) {
      const std::vector<ExampleSize> sizes = epoch_sizes(config, seq_len);
      double tokens = 0;
      for (const ExampleSize& s : sizes) tokens += static_cast<double>(s.tokens);
      // A row's MLM slots: what its examples can need at most, floor(seq_len x p) + K (BERT masks
      // max(1, round(length x p)) of each example).
      const bertc::data::RowCapacity capacity{
          seq_len, static_cast<int64_t>(std::floor(static_cast<double>(seq_len) * config.train.masked_lm_prob)) +
                       most_examples,
          most_examples};
      const size_t rows = packed_rows(sizes, capacity, window);
      const double n = static_cast<double>(sizes.size());
      std::cout << fmt::format("{:>7}  {:>8}  {:>11.1f}  {:>20.1f}%  {:>11}  {:>17.1f}%  {:>10.3f}x\n", seq_len,
                               sizes.size(), tokens / n, 100 * tokens / (n * static_cast<double>(seq_len)), rows,
                               100 * tokens / (static_cast<double>(rows) * static_cast<double>(seq_len)),
                               n / static_cast<double>(rows));
    }
  } catch (const std::exception& e) {
    std::cerr << "bertc-bench-rows: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
