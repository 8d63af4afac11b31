// The learning rate of each optimizer step: linear warmup, then linear, polynomial or no decay.
#pragma once

#include <cstdint>

#include "run_config/config.h"

namespace bertc::train {

// step counts optimizer updates from 1. During the first warmup_steps the rate rises linearly
// to learning_rate; afterwards it falls to end_learning_rate at step `steps`:
// end + (lr - end) * (1 - progress)^power, power 1 for "linear", 0 for "constant".
double learning_rate_at(const run_config::TrainConfig& train, int64_t step);

}  // namespace bertc::train
