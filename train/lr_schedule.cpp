// Warmup and decay of the learning rate.
#include "train/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace bertc::train {

double learning_rate_at(const run_config::TrainConfig& t, int64_t step) {
  if (step <= t.warmup_steps) return t.learning_rate * static_cast<double>(step) / static_cast<double>(t.warmup_steps);
  if (t.lr_decay == run_config::LrDecay::Constant) return t.learning_rate;
  const double span = static_cast<double>(std::max<int64_t>(1, t.steps - t.warmup_steps));
  const double progress = std::clamp(static_cast<double>(step - t.warmup_steps) / span, 0.0, 1.0);
  const double power = t.lr_decay == run_config::LrDecay::Linear ? 1.0 : t.lr_decay_power;
  return t.end_learning_rate + (t.learning_rate - t.end_learning_rate) * std::pow(1.0 - progress, power);
}

}  // namespace bertc::train
