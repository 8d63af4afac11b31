// The names by which stages find values in each other's graphs: what every model outputs, what
// the passes add (gradients, accumulators, loss scaling, the optimizer's outputs) and what the
// trainer binds and reads. Each spelled here once.
#pragma once

#include <string>
#include <string_view>

namespace bertc::ir::names {

// Outputs of the model (a BertForPreTraining graph; every model outputs loss).
inline constexpr std::string_view kLoss = "loss";
inline constexpr std::string_view kMlmLoss = "mlm_loss";
inline constexpr std::string_view kNspLoss = "nsp_loss";
inline constexpr std::string_view kMlmLogits = "mlm_logits";  // [B*P, vocab]: for the trainer's accuracy
inline constexpr std::string_view kNspLogits = "nsp_logits";  // [B, 2]

// A fine-tuning graph (frontend/finetune.h): its task inputs besides the token inputs, and its
// logits ([B, num_labels], [B] for regression, [B*S, num_labels] for token classification).
inline constexpr std::string_view kLabels = "labels";
inline constexpr std::string_view kLabelWeights = "label_weights";  // 1 a real example (token), 0 padding
inline constexpr std::string_view kLogits = "logits";

// Inputs the trainer binds at every step besides the batch.
inline constexpr std::string_view kDropoutSeed = "dropout_seed";
inline constexpr std::string_view kLearningRate = "learning_rate";

// Loss scaling (the precision pass, fp16): the scaled objective and the state holding the scale.
inline constexpr std::string_view kScaledLoss = "scaled_loss";
inline constexpr std::string_view kLossScale = "loss_scale";

// Per param p: its gradient (autodiff's outputs) and accumulator (a state); the optimizer's states,
// "<p>.<state>" for each state its op declares (ir::optimizer_states: exp_avg, exp_avg_sq, ...).
inline constexpr std::string_view kGradSuffix = ".grad";
inline constexpr std::string_view kGradAccumulatorSuffix = ".grad_acc";
inline std::string optimizer_state_of(std::string_view param, std::string_view state) {
  return std::string(param) + "." + std::string(state);
}
inline std::string grad_of(std::string_view param) { return std::string(param) + std::string(kGradSuffix); }
inline std::string grad_accumulator_of(std::string_view param) {
  return std::string(param) + std::string(kGradAccumulatorSuffix);
}

// The optimizer graph: its states and outputs.
inline constexpr std::string_view kOptimizerStep = "optimizer_step";        // updates made so far
inline constexpr std::string_view kLossScaleGoodSteps = "loss_scale_good_steps";
inline constexpr std::string_view kGradNorm = "grad_norm";                  // before clipping
inline constexpr std::string_view kStepSkipped = "step_skipped";            // 1 when an overflow skipped it
inline constexpr std::string_view kLossScaleUsed = "loss_scale_used";       // the scale of this step
// A ZeRO shard's optimizer graph (an input): the sum over every param's gradient accumulator of its
// squared elements, the accumulators summed over the ranks — the global gradient norm's measure,
// which no shard holds alone.
inline constexpr std::string_view kAccumulatorSumOfSquares = "grad_acc_sum_of_squares";

}  // namespace bertc::ir::names
