// What an out-of-memory error advises, by the command that met it: a lower batch, recompute, or,
// where the model's weights and optimizer state alone pass the memory, a smaller model.
#pragma once

#include <string>

#include "frontend/model.h"

namespace bertc::driver {

// The work that ran out of memory: what its advice can name.
enum class Workload { Train, Finetune, Check, Eval, Batch, PrepareData, Vocab, Other };

// What makes `work` need less memory, as its user types it: a compiled program's batch and
// recompute are compiled in, eval's batch is a file, prepare-data has its own bound.
std::string less_memory(Workload work, bool compiled);

struct MemoryAdvice {
  std::string text;
  bool model_too_large = false;  // the weights alone pass the memory: no batch or recompute helps
};
// less_memory's advice, or, for train, finetune and check of the TOML config `config` (not a
// compiled program), when the model's weights and optimizer state alone pass the memory the host
// has free now (the failed allocations gone), that instead: no batch size or recompute helps then.
MemoryAdvice memory_advice(Workload work, const std::string& config, bool compiled,
                           const frontend::ModelDefinition& model);

}  // namespace bertc::driver
