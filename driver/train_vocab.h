// bertc vocab: a WordPiece vocabulary of a given size trained from a config's text (or --input),
// with the config's do_lower_case (data/vocab_trainer.h).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "frontend/model.h"

namespace bertc::driver {

struct VocabArgs {
  std::string config, input, output;
  int64_t size = 0;  // (0: the config's [model] vocab_size, which the vocabulary must fit)
  int64_t min_frequency = 2, limit_alphabet = 1000;
  int threads = 0;
};

// Writes the vocabulary (refusing a file that exists), progress and a summary on `log`.
int train_vocab(const VocabArgs& args, const frontend::ModelDefinition& model, std::ostream& log);

}  // namespace bertc::driver
