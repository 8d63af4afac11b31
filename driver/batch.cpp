// bertc batch (see batch.h).
#include "driver/batch.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include <fmt/format.h>

#include "data/vocab_identity.h"
#include "driver/output_file.h"
#include "driver/run_inputs.h"
#include "run_config/config.h"
#include "run_folder/stop_request.h"
#include "support/safetensors.h"
#include "train/batches.h"
#include "train/finetune.h"

namespace bertc::driver {
namespace {

// Writes a batch file (bertc batch's) with the vocabulary it was made with, recorded by its
// absolute path as checkpoints record it (the file named is the same from any folder), and its
// text's lower-casing: eval checks both against the weights'.
void write_batch_file(support::Safetensors& file, const data::Vocab& vocab, bool lower_case, const std::string& output) {
  data::VocabRecord record = data::record_of(vocab);
  std::error_code ec;
  if (const auto absolute = std::filesystem::absolute(record.path, ec); !ec) record.path = absolute.lexically_normal().string();
  file.metadata.merge(data::vocab_metadata(record));
  file.metadata["do_lower_case"] = lower_case ? "true" : "false";
  support::write_safetensors(output, file);
}

// Writes batch `index` of a [finetune] config's task examples (--data, else its dev_data), the
// input bertc eval reads for a fine-tuned model.
int task_batch(BatchArgs args, const run_config::Config& config) {
  if (args.data.empty() && config.finetune.dev_data.empty())
    throw std::invalid_argument(fmt::format("{}: a [finetune] config names no dev_data, and bertc batch writes a batch "
                                            "of task examples from it: give --data FILE (.tsv or .jsonl)",
                                            args.config));
  const std::filesystem::path data = chosen_path(args.data, config, config.finetune.dev_data);
  const std::filesystem::path vocab_path = chosen_path(args.vocab, config, config.train.vocab);
  refuse_console(args.output, "-o", "a batch (a safetensors file)");
  args.output = through_output_link(args.output);
  refuse_output_onto_input(args.output, "-o",
                           {{args.config, "the config"}, {vocab_path.string(), "the vocabulary"},
                            {data.string(), "the task examples"}});
  refuse_replacing_another_kind(args.output, "-o", "bertc-batch");
  const data::Vocab vocab = train::load_run_vocab(config, vocab_path, std::cerr);
  support::Safetensors file = train::task_batch_file(config, data, vocab, args.index, std::cerr);
  write_batch_file(file, vocab, config.train.do_lower_case, args.output);
  std::cerr << fmt::format("batch {} of {}'s task examples written to {}\n", args.index, data.string(), args.output);
  return 0;
}

}  // namespace

// Writes micro-batch `index` of the config's training stream, the input bertc eval reads (of a
// [finetune] config: a batch of its task examples, task_batch).
int batch(const BatchArgs& given, const frontend::ModelDefinition& model) {
  BatchArgs args = given;
  const run_folder::StopOnSignal ends_at_once(nullptr, "batch ended by a signal: nothing was written (a file being "
                                                  "written is removed); run the same command again");
  const run_config::Config config = run_config::load_data_config(args.config, model.extra_keys);
  if (config.finetune_section) return task_batch(args, config);
  refuse_console(args.output, "-o", "a batch (a safetensors file)");
  args.output = through_output_link(args.output);  // (a link given to -o: the batch goes where it leads)
  refuse_output_onto_input(args.output, "-o",
                           {{args.config, "the config"},
                            {chosen_path(args.vocab, config, config.train.vocab).string(), "the vocabulary"},
                            {chosen_path(args.data, config, config.train.data).string(), "the data"}});
  refuse_replacing_another_kind(args.output, "-o", "bertc-batch");
  const data::Vocab vocab = train::load_run_vocab(config, chosen_path(args.vocab, config, config.train.vocab), std::cerr);
  const data::BatchStream stream =
      train::open_batch_stream(config, chosen_path(args.data, config, config.train.data), vocab, std::cerr);
  if (args.index > stream.last_micro_batch())
    throw std::invalid_argument(fmt::format("--index {}: micro-batch {} of {} examples (batch_size) reaches past example "
                                            "2^63, which the stream of batches does not number: give --index {} or "
                                            "less",
                                            args.index, args.index, config.train.batch_size,
                                            stream.last_micro_batch()));
  // (past the data's micro-batches the stream goes round again: said, as train says it)
  if (const int64_t per_pass = std::max<int64_t>(1, stream.examples() / config.train.batch_size);
      args.index >= per_pass)
    std::cerr << fmt::format("batch: warning: the data holds {} micro-batches of {} (its {} {}), and micro-batch "
                             "{} is from pass {} over them\n",
                             per_pass, config.train.batch_size, stream.examples(), stream.units(), args.index,
                             args.index / per_pass + 1);
  support::Safetensors file = train::batch_to_safetensors(stream.batch(args.index));
  write_batch_file(file, vocab, config.train.do_lower_case, args.output);
  std::cerr << fmt::format("micro-batch {} written to {}\n", args.index, args.output);
  return 0;
}

}  // namespace bertc::driver
