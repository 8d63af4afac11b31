// bertc batch: one micro-batch of a config's training stream, or of a [finetune] config's task
// examples, as the safetensors file bertc eval reads.
#pragma once

#include <cstdint>
#include <string>

#include "frontend/model.h"

namespace bertc::driver {

struct BatchArgs {
  std::string config, data, vocab, output;
  int64_t index = 0;
};

// Writes micro-batch `index` to `output`, notes on stderr. Returns the exit code.
int batch(const BatchArgs& args, const frontend::ModelDefinition& model);

}  // namespace bertc::driver
