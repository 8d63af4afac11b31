// bertc eval: the losses (and, asked, the logits and every parameter's gradient) of one batch
// file on the CPU reference, dropout off.
#pragma once

#include <string>

#include "frontend/model.h"

namespace bertc::driver {

struct EvalArgs {
  std::string config, init, batch, dump_grads, dump_logits;
};

// Prints each loss on stdout, notes on stderr, and writes the dumps asked for. Returns the exit code.
int eval(const EvalArgs& args, const frontend::ModelDefinition& model);

}  // namespace bertc::driver
