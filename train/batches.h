// Training batches for the runtime: the batch stream of a config, a batch as graph inputs, and a
// batch as a safetensors file (the format bertc eval reads).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "run_config/config.h"
#include "passes/pipeline.h"
#include "data/pretraining_data.h"
#include "data/shard_examples.h"
#include "support/safetensors.h"
#include "support/tensor_io.h"

namespace bertc::train {

// Tokenizes the text, makes the examples and returns their batch stream; reports to `log`. Shards
// are checked against the config and `vocab` before it returns (data/shard_files.h). Throws
// data::Stopped when a stop signal (run_folder/stop_request.h) comes while text is read or counted, or
// shards from elsewhere are checked.
data::BatchStream open_batch_stream(const run_config::Config& config, const std::filesystem::path& data,
                                    const data::Vocab& vocab, std::ostream& log);
// The shard set of [train] data at `data` (HDF5 shards checked against the config and `vocab`, or
// text made into examples a shard at a time), what it is in words, said on `log` as
// open_batch_stream says it. Throws as open_batch_stream.
struct OpenedShards {
  std::shared_ptr<const data::ShardSet> set;
  std::string what;
};
OpenedShards open_shard_set(const run_config::Config& config, const std::filesystem::path& data,
                            const data::Vocab& vocab, std::ostream& log);
// What a row holds at most under the config's [train] packing (nullopt: one example a row).
std::optional<data::RowCapacity> row_capacity(const run_config::Config& config);
// The examples open_batch_stream batches (an epoch of them, reshuffled each epoch), said the same
// way on `log`.
std::shared_ptr<const data::ExampleSource> open_example_source(const run_config::Config& config,
                                                               const std::filesystem::path& data,
                                                               const data::Vocab& vocab, std::ostream& log);

// The run's vocabulary, loaded and said on `log` ("vocab: PATH (N tokens, xxh3 H)"), refused when
// it has more tokens than [model] vocab_size.
// `vocab_flag`: the command takes --vocab (finetune does not: its advice names [train] vocab only).
data::Vocab load_run_vocab(const run_config::Config& config, const std::filesystem::path& path, std::ostream& log,
                           bool vocab_flag = true);

// A batch of random tokens of the config's shape (full sequences, two segments, random masked
// positions and labels): what benchmarks and the step check run on, with no data files.
data::Batch synthetic_batch(const run_config::Config& config, uint64_t seed);

// Everything one training step and optimizer step of `program` read, with no data files: fresh
// params and states (seeded by `seed`), a synthetic batch, a dropout seed and the config's
// learning rate. What benchmarks and bertc check run on.
support::Environment synthetic_environment(const run_config::Config& config, const passes::TrainingProgram& program,
                                  uint64_t seed);

// The batch as the BERT graph's inputs (input_ids, ..., next_sentence_labels).
void bind_batch(const data::Batch& batch, support::Environment& env);

// Checks every index input of `inputs` (input_ids, token_type_ids, masked_lm_positions,
// masked_lm_ids, next_sentence_labels) against the config's ranges, the same for every device,
// before any runs it, and attention_mask (0 or 1) and masked_lm_weights (finite, 0 or more); throws
// data::DataError naming `what` (the batch), the row, and the config key.
void check_batch_ranges(const support::Environment& inputs, const run_config::Config& config, const std::string& what);

// The proof that check_batch_ranges is enough: every index a program's kernels read a table,
// sort or pick a label by — a gather's indices, an argsort's, a scatter-add's indices and order,
// a cross-entropy's labels, inside fused regions too — must come, through reshapes, broadcasts,
// casts and slices only, from a batch input that check_batch_ranges checks against an end no
// larger than the dimension it indexes (a scatter-add's order: an argsort's permutation). The
// kernels do not check indices (an id out of range would read out of bounds on a device), so a
// program where this does not hold is refused before it runs: throws std::invalid_argument
// naming the op, where its indices come from, and the dimension.
void check_indices_are_checked(const ir::Graph& program, const run_config::Config& config);
// The same, throwing TrainError (a custom model's graph is what it refuses).
void require_checked_indices(const ir::Graph& program, const run_config::Config& config);

// The batch as tensors: integers as I64 (as PyTorch writes them), masked_lm_weights as F32.
support::Safetensors batch_to_safetensors(const data::Batch& batch);

}  // namespace bertc::train
