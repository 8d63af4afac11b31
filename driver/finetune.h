// bertc finetune: a task head trained on a (pretrained) encoder from a config with a [finetune]
// section (train/finetune.h), on the CPU reference or a device.
#pragma once

#include <ostream>
#include <string>

#include "frontend/model.h"

namespace bertc::driver {

class CompileFlags;

struct FinetuneArgs {
  std::string config, init, train_data, dev_data, device = "auto", checkpoint_dir, metrics;
  int64_t epochs = 0;
  bool eager = false;
};

// Fine-tunes; progress and the summary on `log`. Returns the exit code (130/143 after a signal).
int finetune(const FinetuneArgs& args, const CompileFlags& flags, const frontend::ModelDefinition& model,
             std::ostream& log);

}  // namespace bertc::driver
