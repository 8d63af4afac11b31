// bertc train: a config or a compiled program trained on the CPU reference or a device, on one
// rank or as one of a data-parallel run's ranks (train/trainer.h does the training).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "codegen/program.h"
#include "driver/compile_flags.h"
#include "frontend/model.h"

namespace bertc::driver {

struct TrainArgs {
  std::string config, data, vocab, device = "auto", checkpoint_dir, metrics, init, batch_size;
  int64_t steps = 0, until = 0;
  std::optional<uint64_t> device_memory;
  std::optional<int64_t> profile;
  std::string profile_out;
  bool resume = false, eager = false, autotune = false;
};

// Trains; progress and the summary on stderr. Returns the exit code (128 + the signal after a
// stop by one). `embedded`: the program this executable carries (bertc compile --executable),
// trained when no config is given; `self` names this executable. On several ranks an error on any
// rank stops every rank (the others would wait for it until rank_timeout), naming the rank.
int train(const TrainArgs& args, const CompileFlags& flags, const frontend::ModelDefinition& model,
          const std::optional<codegen::CompiledProgram>& embedded, const std::string& self);

}  // namespace bertc::driver
