// One deterministic bert-tiny batch with training state, shared by the whole-step kernel tests
// and the Host runner's tests.
#pragma once

#include <functional>

#include "run_config/config.h"
#include "passes/pipeline.h"
#include "run_folder/initialize.h"
#include "ir/host_tensor.h"
#include "train/batches.h"

namespace bertc::testing {

using ir::HostTensor;

inline HostTensor<float> ints(const ir::Shape& s, const std::function<int64_t(int64_t)>& f, ir::DType d = ir::DType::I32) {
  auto t = HostTensor<float>::zeros({d, s});
  for (size_t i = 0; i < t.integer.size(); ++i) t.integer[i] = f(static_cast<int64_t>(i));
  return t;
}

// Params and states as training starts, and one deterministic batch: padding at the end of every
// other sequence, two segments, masked positions with one unused (weight 0).
inline ir::Environment<float> batch_environment(const run_config::Config& c, const passes::TrainingProgram& p) {
  support::Environment env;
  run_folder::initialize_parameters(p.step, c.model.initializer_range, c.model.pad_token_id, 7, env);
  run_folder::initialize_states(p.step, env);
  run_folder::initialize_states(p.optimizer, env);
  const int64_t B = c.train.batch_size, S = c.train.seq_len, P = c.train.max_predictions_per_seq, V = c.model.vocab_size;
  auto padded = [&](int64_t i) { return (i / S) % 2 == 1 && i % S >= S * 3 / 4; };
  env["input_ids"] = ints({B, S}, [&](int64_t i) { return padded(i) ? 0 : 1 + (i * 37) % (V - 1); });
  env["token_type_ids"] = ints({B, S}, [&](int64_t i) { return padded(i) ? 0 : (i % S >= S / 2); });
  env["attention_mask"] = ints({B, S}, [&](int64_t i) { return padded(i) ? 0 : 1; });
  env["masked_lm_positions"] = ints({B, P}, [&](int64_t i) { return (i % P) * (S / P) + 1; });
  env["masked_lm_ids"] = ints({B, P}, [&](int64_t i) { return (i * 11) % V; });
  env["masked_lm_weights"] = HostTensor<float>::zeros({ir::DType::F32, {B, P}});
  for (int64_t i = 0; i < B * P; ++i) env["masked_lm_weights"].real[static_cast<size_t>(i)] = i % P == P - 1 ? 0.0f : 1.0f;
  env["next_sentence_labels"] = ints({B}, [](int64_t i) { return i % 2; });
  env["dropout_seed"] = ints({}, [](int64_t) { return 20261130; }, ir::DType::I64);
  env["learning_rate"] = HostTensor<float>::zeros({ir::DType::F32, {}});
  env["learning_rate"].real[0] = 1e-3f;
  return env;
}

// The same training state, and rows of [train] packing_max_examples examples each (a config with
// packing = "pack"): the trainer's synthetic rows (train::synthetic_batch).
inline ir::Environment<float> rows_environment(const run_config::Config& c, const passes::TrainingProgram& p) {
  ir::Environment<float> env = batch_environment(c, p);
  train::bind_batch(train::synthetic_batch(c, 7), env);
  return env;
}

}  // namespace bertc::testing
