// bertc finetune (see finetune_command.h).
#include "driver/finetune.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "codegen/host_compile.h"
#include "run_config/config.h"
#include "run_config/hf_config.h"
#include "driver/compile_flags.h"
#include "driver/device_choice.h"
#include "driver/memory_advice.h"
#include "driver/ranks.h"
#include "ir/out_of_memory.h"
#include "driver/output_file.h"
#include "run_folder/checkpoint.h"
#include "train/finetune.h"

namespace bertc::driver {
namespace {

// A path given on the command line (as it is), else the config's key (relative to the config),
// else nothing.
std::optional<std::filesystem::path> path_of(const std::string& flag, const run_config::Config& c, const std::string& key) {
  if (!flag.empty()) return std::filesystem::path(flag);
  if (!key.empty()) return c.resolve(key);
  return std::nullopt;
}

// The rest of bertc finetune, on this rank of `o.world`.
int finetune_rank(const FinetuneArgs& args, const CompileFlags& flags, const frontend::ModelDefinition& model,
                  train::FinetuneOptions& o, std::ostream& log);

}  // namespace

int finetune(const FinetuneArgs& args, const CompileFlags& flags, const frontend::ModelDefinition& model,
             std::ostream& log) {
  train::FinetuneOptions o;
  o.config = run_config::load_config(args.config, model.extra_keys, /*model_required=*/false);
  if (!o.config.finetune_section)
    throw std::invalid_argument(fmt::format("{}: no [finetune] section: a fine-tuning config names its task and data "
                                            "there (see examples/finetune-tiny.toml); bertc train pretrains",
                                            args.config));
  // Rank 0 reports for all; an error on any rank ends every rank.
  const std::shared_ptr<distributed::Communicator> world = distributed::open_world(o.config.train.rank_timeout);
  o.world = world;
  return run_as_rank(
      *world,
      [&] {
        const QuietStderr quiet(world->rank() != 0);
        return finetune_rank(args, flags, model, o, log);
      },
      [&](const std::exception& e) {
        return dynamic_cast<const ir::OutOfMemory*>(&e)
                   ? ": " + memory_advice(Workload::Finetune, args.config, false, model).text
                   : std::string();
      });
}

namespace {

int finetune_rank(const FinetuneArgs& args, const CompileFlags& flags, const frontend::ModelDefinition& model,
                  train::FinetuneOptions& o, std::ostream& log) {
  run_config::Config& c = o.config;
  c.compile = resolve_here(flags.apply(c.compile));
  if (args.epochs > 0) c.finetune.epochs = args.epochs;
  const std::optional<std::filesystem::path> train_data = path_of(args.train_data, c, c.finetune.train_data);
  if (!train_data)
    throw std::invalid_argument(fmt::format("{}: no training examples: set [finetune] train_data or give --train-data",
                                            args.config));
  o.train_data = *train_data;
  o.dev_data = path_of(args.dev_data, c, c.finetune.dev_data);
  o.init = path_of(args.init, c, c.finetune.init);
  // (named as the user gave it: the config's key, whose paths are the config's folder's)
  run_folder::refuse_run_folder_as_weights(o.init.value_or(std::filesystem::path()),
                                      args.init.empty() ? fmt::format("{}'s [finetune] init (as read from here)", args.config)
                                                        : std::string("--init"));
  run_config::take_model_from(c, o.init.value_or(std::filesystem::path()), model.name);  // (a Hugging Face folder's config.json)
  o.vocab = c.resolve(c.train.vocab);
  o.checkpoint_dir = args.checkpoint_dir.empty() ? std::filesystem::path("checkpoints") / c.name
                                                 : std::filesystem::path(args.checkpoint_dir);
  refuse_dangling_link(o.checkpoint_dir.string(), "--checkpoint-dir");
  refuse_run_folder_in_init(o.checkpoint_dir, o.init ? o.init->string() : "");
  o.metrics = args.metrics.empty() ? o.checkpoint_dir / "metrics.jsonl" : std::filesystem::path(args.metrics);
  refuse_metrics_in_another_run_folder(o.metrics, o.checkpoint_dir);
  refuse_output_onto_input(o.metrics.string(), "--metrics",
                           {{args.config, "the config"},
                            {o.train_data.string(), "the training data"},
                            {o.dev_data ? o.dev_data->string() : "", "the dev data"},
                            {o.vocab.string(), "the vocabulary"},
                            {o.init ? o.init->string() : "", "--init"}});
  o.device = choose_device(args.device);
  require_precision_computed(o.config.compile.precision, o.device, "fine-tune");
  o.eager = args.eager;
  if (o.eager && !o.device)
    throw std::invalid_argument("--eager issues a device's kernel launches one by one, and the CPU reference runs "
                                "none: fine-tune with --device cuda or host, or drop --eager");
  o.kernel_cache = codegen::default_cache_folder();
  const auto began = std::chrono::steady_clock::now();
  const train::FinetuneSummary s = train::finetune_model(model, o, log);
  // (a stop ends its epoch early: that one is not a whole epoch)
  const size_t whole = static_cast<size_t>(std::count_if(s.epochs.begin(), s.epochs.end(), [](const auto& e) { return e.whole; }));
  log << fmt::format("finetune: {} epochs{}, {} steps in {:.1f} s; metrics in {}\n", whole,
                     whole < s.epochs.size() ? fmt::format(" and part of epoch {} (stopped)", s.epochs.size()) : "",
                     s.losses.size(), std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count(),
                     o.metrics.string());
  return s.stopped_by_signal ? 128 + s.stopped_by_signal : 0;
}

}  // namespace

}  // namespace bertc::driver
