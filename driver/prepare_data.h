// bertc prepare-data: a config's training text (or --input) into HDF5 shards in NVIDIA's layout,
// with the config's tokenizer and example settings (seq_len, max_predictions_per_seq, dupe_factor,
// masked_lm_prob, short_seq_prob, seed): phase 2 is another config.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "frontend/model.h"

namespace bertc::driver {

struct PrepareDataArgs {
  std::string config, input, vocab, output;
  int64_t shards = 16;
  double memory_mb = 1024;
  int threads = 0;
};

// Writes the shards, a progress line on `log` (a terminal's is rewritten in place), and a summary.
int prepare_data(const PrepareDataArgs& args, const frontend::ModelDefinition& model, std::ostream& log);

}  // namespace bertc::driver
