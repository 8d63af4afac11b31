// bertc train (see train_run.h).
#include "driver/train_run.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <streambuf>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "codegen/host_compile.h"
#include "distributed/communicator.h"
#include "driver/compiled_program.h"
#include "driver/device_choice.h"
#include "driver/memory_advice.h"
#include "driver/output_file.h"
#include "driver/ptx_counts.h"
#include "driver/run_inputs.h"
#include "ir/enum_names.h"
#include "ir/out_of_memory.h"
#include "passes/options.h"
#include "run_config/config.h"
#include "run_config/hf_config.h"
#include "run_folder/checkpoint.h"
#include "support/resolved_path.h"
#include "support/shell_word.h"
#include "driver/ranks.h"
#include "train/trainer.h"
#include "support/ascii_lower.h"

namespace bertc::driver {
namespace {

int train_rank(const TrainArgs& args, const CompileFlags& flags, const frontend::ModelDefinition& model,
               run_config::Config config, std::shared_ptr<distributed::Communicator> world,
               std::shared_ptr<const codegen::CompiledProgram> compiled);

// A compiled program (bertc compile -o FILE.bertx) and the config it was compiled from, whose
// relative paths resolve against the .bertx's folder. Flags that would change the program are
// refused: they need a compile.
struct LoadedProgram {
  std::shared_ptr<const codegen::CompiledProgram> program;
  run_config::Config config;
};

// For training; also refuses the train flags a compiled program cannot take.
LoadedProgram load_compiled(codegen::CompiledProgram program, const std::string& source, const TrainArgs& args,
                            const CompileFlags& flags, const frontend::ModelDefinition& model) {
  LoadedProgram loaded;
  loaded.config = compiled_config(program, source, flags, model);
  loaded.program = std::make_shared<const codegen::CompiledProgram>(std::move(program));
  if (!args.batch_size.empty())
    throw std::invalid_argument(fmt::format("{}: the micro-batch is compiled into the program ([train] batch_size {}): "
                                            "set batch_size in the config and compile it again, or train from the "
                                            "config with --batch-size",
                                            source, loaded.config.train.batch_size));
  if (args.autotune)
    throw std::invalid_argument(fmt::format("{}: its kernels were chosen when it was compiled; --autotune chooses "
                                            "them at the start of a run: train from the config with --autotune",
                                            source));
  if (args.device == "cpu")
    throw std::invalid_argument(fmt::format("{}: a .bertx runs its kernels on a device, and the CPU reference runs "
                                            "none: train it with --device cuda (or host, the emulation)",
                                            source));
  return loaded;
}

// A compiled program's --init must record the model it was compiled for, where it records one (a
// folder's config.json, a checkpoint's model record), as a config's --init gives its [model]: the
// weights of another model loaded where names and shapes allow (a deeper model's first layers,
// another activation or layer-norm epsilon) and trained silently as this one.
void refuse_init_of_another_model(const run_config::Config& compiled, const std::string& init,
                                  const frontend::ModelDefinition& model, const std::string& source) {
  run_folder::refuse_run_folder_as_weights(init, "--init");
  const std::optional<frontend::ModelConfig> recorded = run_config::recorded_model(init, model.name, compiled);
  if (!recorded) return;  // (weights alone: their names and shapes are checked as they load)
  run_config::Config theirs;
  theirs.model = *recorded;
  std::vector<std::string> differ;
  for (const auto& spec : run_config::config_keys())
    if (spec.section == "model" && !run_config::overrides_a_record(spec.key) && spec.get(compiled) != spec.get(theirs))
      differ.push_back(fmt::format("{} = {} there, {} in the program", spec.key, support::value_text(spec.get(theirs)),
                                   support::value_text(spec.get(compiled))));
  if (differ.empty()) return;
  throw std::invalid_argument(fmt::format(
      "--init {}: {} describes another model than {} was compiled for ({}): start it from weights of the model it "
      "was compiled for, or train that model from a config (bertc train CONFIG --init {}: its [model] comes from there)",
      init, run_config::is_hf_folder(init) ? "its config.json" : "its model record", source, fmt::join(differ, "; "),
      support::shell_word(init)));
}

}  // namespace

int train(const TrainArgs& args, const CompileFlags& flags, const frontend::ModelDefinition& model,
          const std::optional<codegen::CompiledProgram>& embedded, const std::string& self) {
  std::optional<LoadedProgram> compiled;
  if (args.config.empty() && embedded) compiled = load_compiled(*embedded, self, args, flags, model);
  else if (args.config.empty())
    throw std::invalid_argument(
        std::filesystem::path(self).filename() == "bertc"
            ? std::string("train needs a config (or a .bertx): bertc train CONFIG")
            : fmt::format("train needs a config (or a .bertx): {0} train CONFIG; if {0} is a training executable "
                          "(bertc compile --executable), the program it should carry is missing or damaged (cut "
                          "short?): bertc info {0} says what it holds; make it again",
                          self));
  else if (std::optional<codegen::CompiledProgram> p = compiled_program_in(args.config))
    compiled = load_compiled(std::move(*p), args.config, args, flags, model);
  if (compiled && !args.init.empty())
    refuse_init_of_another_model(compiled->config, args.init, model, args.config.empty() ? self : args.config);
  run_config::Config config = compiled ? compiled->config : load_config_for(args.config, args.init, model);
  if (config.finetune_section)
    throw std::invalid_argument(fmt::format("{}: a [finetune] config trains a task head: bertc finetune {}",
                                            args.config, args.config));
  const std::shared_ptr<distributed::Communicator> world = distributed::open_world(config.train.rank_timeout);
  // (Said, not silent: a config given to a training executable is trained in place of its own.)
  if (embedded && !args.config.empty() && world->rank() == 0)
    std::cerr << fmt::format("train: {} carries a compiled program of {}, and trains {} instead, as given (run it "
                             "without a config to train its own)\n",
                             self, embedded->model, args.config);
  auto run = [&] {
    if (!compiled) return train_rank(args, flags, model, std::move(config), world, nullptr);
    // A compiled program trains with the config inside it: a fix that sets a [model] or [train]
    // key means compiling it again, which the messages of the layers below cannot know.
    try {
      return train_rank(args, flags, model, std::move(config), world, compiled->program);
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      if (dynamic_cast<const ir::OutOfMemory*>(&e) ||
          (what.find("[train]") == std::string::npos && what.find("[model]") == std::string::npos))
        throw;
      throw std::runtime_error(fmt::format("{} ({} trains with the [model] and [train] it was compiled from: a change "
                                           "there means compiling it again, bertc compile CONFIG --arch {} -o "
                                           "FILE.bertx)",
                                           what, args.config.empty() ? self : args.config,
                                           compiled->program->options.arch.text()));
    }
  };
  return run_as_rank(*world, run, [&](const std::exception& e) {
    return dynamic_cast<const ir::OutOfMemory*>(&e)
               ? ": " + memory_advice(Workload::Train, args.config, compiled.has_value(), model).text
               : std::string();
  });
}

namespace {

int train_rank(const TrainArgs& args, const CompileFlags& flags, const frontend::ModelDefinition& model,
               run_config::Config config, std::shared_ptr<distributed::Communicator> world,
               std::shared_ptr<const codegen::CompiledProgram> compiled) {
  const QuietStderr quiet(world->rank() != 0);
  train::TrainOptions o;
  o.world = world;
  o.config = std::move(config);
  if (!compiled) o.config.compile = resolve_here(flags.apply(o.config.compile));
  if (const std::string why = run_config::zero_stage_issue(o.config); !why.empty()) throw std::invalid_argument(why);
  o.compiled = std::move(compiled);
  if (args.steps > 0) o.config.train.steps = args.steps;  // the schedule decays over the run's length
  if (args.batch_size == "auto") o.auto_batch = true;
  else if (!args.batch_size.empty()) o.config.train.batch_size = std::stoll(args.batch_size);
  o.device_memory = args.device_memory;
  if (o.device_memory && !o.auto_batch)
    throw std::invalid_argument("--device-memory plans --batch-size auto: pass --batch-size auto too");
  const auto& t = o.config.train;
  if (args.until > t.steps)
    throw std::invalid_argument(fmt::format("--until {} is after the run's last step ({}): give --steps {} too, or a "
                                            "smaller --until", args.until, t.steps, args.until));
  o.stop_after = args.until > 0 ? args.until : t.steps;
  o.data = chosen_path(args.data, o.config, t.data);
  o.vocab = chosen_path(args.vocab, o.config, t.vocab);
  o.checkpoint_dir = args.checkpoint_dir.empty() ? std::filesystem::path("checkpoints") / o.config.name
                                                 : std::filesystem::path(args.checkpoint_dir);
  refuse_dangling_link(o.checkpoint_dir.string(), "--checkpoint-dir");
  // (A run folder that is the data's folder, or inside it: its checkpoints among the shards or
  // text, left out of the next run's data with a note, or taken for a folder of data inside.)
  if (std::error_code ec; std::filesystem::is_directory(o.data, ec)) {
    const std::filesystem::path data = support::resolved_path(o.data),
                                run = support::resolved_path(o.checkpoint_dir);
    if (support::is_within(run, data))
      throw std::invalid_argument(fmt::format("--checkpoint-dir {}: {} the folder of the training data ({}), and a run "
                                              "folder's checkpoints and metrics are no data: choose a folder outside "
                                              "it",
                                              o.checkpoint_dir.string(), run == data ? "is" : "is inside",
                                              o.data.string()));
  }
  refuse_output_onto_input(o.config.compile.dump_ir, "--dump-ir", {{o.data.string(), "the training data"}});
  refuse_output_among_text(o.config.compile.dump_ir, "--dump-ir", "stages.txt");
  refuse_checkpoint_name(o.config.compile.dump_ir, "--dump-ir", "a folder of IR");
  refuse_run_folder_in_init(o.checkpoint_dir, args.init);
  o.metrics = args.metrics.empty() ? o.checkpoint_dir / "metrics.jsonl" : std::filesystem::path(args.metrics);
  refuse_metrics_in_another_run_folder(o.metrics, o.checkpoint_dir);
  refuse_output_onto_input(o.metrics.string(), "--metrics",
                           {{args.config, "the config"},
                            {o.vocab.string(), "the vocabulary"},
                            {data_read_at(o.data, o.metrics), "the training data"},
                            {args.init, "--init"}});
  o.resume = args.resume;
  // (The same command and --resume continues a run that started from --init: its [model] came
  // from there, and still does; the weights are the checkpoint's, said so.)
  if (o.resume && !args.init.empty())
    std::cerr << fmt::format("train: --resume continues from the newest checkpoint in {}: its weights, not --init "
                             "{}'s, which gives only [model], to a config without one\n",
                             o.checkpoint_dir.string(), args.init);
  o.eager = args.eager;
  o.autotune = args.autotune;
  if (o.autotune && o.config.compile.matmul != passes::MatmulPolicy::Auto)
    throw std::invalid_argument(
        std::ranges::count(flags.given(), std::string("--matmul"))
            ? fmt::format("--autotune chooses between generated kernels and cuBLAS per product; --matmul {} fixes that "
                          "choice: drop one of them",
                          ir::enum_name(o.config.compile.matmul))
            : fmt::format("--autotune chooses between generated kernels and cuBLAS per product; the config's "
                          "[compile] matmul = \"{}\" fixes that choice: drop --autotune, or pass --matmul auto",
                          ir::enum_name(o.config.compile.matmul)));
  if (!args.init.empty()) o.init = args.init;
  o.live_progress = ::isatty(STDERR_FILENO) != 0;
  o.device = o.compiled ? choose_device_for_compiled(args.device, o.config.source) : choose_device(args.device);
  require_precision_computed(o.config.compile.precision, o.device, "train");
  if (o.autotune && !o.device)
    throw std::invalid_argument("--autotune times kernels on a device, and the CPU reference runs none: train with "
                                "--device cuda (or host, to check the mechanism)");
  if (o.eager && !o.device)
    throw std::invalid_argument("--eager issues a device's kernel launches one by one, and the CPU reference runs "
                                "none: train with --device cuda or host, or drop --eager");
  o.kernel_cache = codegen::default_cache_folder();
  o.profile_step = args.profile;
  o.counted_profile = [](const std::vector<runtime::PtxLaunchRecord>& launches, int sm, passes::Precision precision,
                         bool registers_known) { return ptx_counts_text(launches, sm, precision, registers_known); };
  o.profile_out = !args.profile_out.empty() ? std::filesystem::path(args.profile_out)
                  : args.profile ? o.checkpoint_dir / fmt::format("profile-step{}.json", *args.profile)
                                 : std::filesystem::path();
  if (!args.profile_out.empty() && !args.profile)
    throw std::invalid_argument("--profile-out names where --profile STEP writes its JSON: give --profile too");
  if (std::error_code ec; !o.profile_out.empty() && std::filesystem::exists(o.profile_out, ec)) {
    // Replaced only when it is a profile (bertc-profile JSON) itself: --profile-out never costs a
    // file; a device or a pipe is refused before it is read (reading /dev/stdout would wait).
    if (!std::filesystem::is_regular_file(o.profile_out, ec))
      throw std::invalid_argument(fmt::format("--profile-out {}: not a file (a folder, a device or a pipe): the profile "
                                              "is a JSON file; name one",
                                              o.profile_out.string()));
    std::ifstream in(o.profile_out);
    const nlohmann::json earlier = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!earlier.is_object() || earlier.value("format", "") != "bertc-profile-1")
      throw std::invalid_argument(fmt::format("--profile-out {}: exists, and is not a profile bertc wrote: give a new "
                                              "file, or remove this one first if it is yours to lose",
                                              o.profile_out.string()));
  }
  if (!args.profile_out.empty()) {  // (the checks every other output gets)
    o.profile_out = through_output_link(o.profile_out.string());
    refuse_checkpoint_name(o.profile_out.string(), "--profile-out", "a profile");
    refuse_output_onto_input(o.profile_out.string(), "--profile-out",
                             {{data_read_at(o.data, o.profile_out), "the training data"}});
    // (a name a folder's reader takes as text, among text: a run on that folder would read it)
    if (const std::string name = support::ascii_lower(o.profile_out.filename().string());
        name.ends_with(".txt") || name.ends_with(".txt.gz"))
      refuse_output_among_text(o.profile_out.has_parent_path() ? o.profile_out.parent_path().string() : ".",
                               "--profile-out", name);
    std::error_code ec;
    if (support::resolved_path(o.profile_out) == support::resolved_path(o.metrics))
      throw std::invalid_argument(fmt::format("--profile-out {}: is this run's metrics file ({}), whose lines the "
                                              "profile would replace: name another file",
                                              args.profile_out, o.metrics.string()));
  }
  // (with --batch-size auto the split is chosen later, and said then: not this config's)
  const std::string batch = o.auto_batch ? fmt::format("{} sequences (split as --batch-size auto chooses below)",
                                                       t.gradient_accumulation_steps * t.batch_size)
                                         : fmt::format("{} x {}", t.gradient_accumulation_steps, t.batch_size);
  std::cerr << fmt::format("train: {} ({}), {} steps of {} x {} tokens, {} optimizer, {} precision, checkpoints in {}\n",
                           o.config.name, model.name, t.steps, batch, t.seq_len, passes::optimizer_name(t.optimizer),
                           ir::enum_name(o.config.compile.precision), o.checkpoint_dir.string());
  // (a warmup longer than the run never reaches the configured rate, and never decays: said, as
  // a run shortened with --steps for a try keeps the full run's warmup)
  if (t.warmup_steps > t.steps)
    std::cerr << fmt::format("train: warning: [train] warmup_steps = {} is more than the run's {} steps: the learning "
                             "rate rises to {:.3g} of learning_rate = {:g} and never decays; lower warmup_steps for a run "
                             "this long\n",
                             t.warmup_steps, t.steps, static_cast<double>(t.steps) / static_cast<double>(t.warmup_steps),
                             t.learning_rate);
  const auto began = std::chrono::steady_clock::now();
  const train::TrainSummary s = train::train_model(model, o, std::cerr);
  if (!s.losses.empty()) {
    const size_t n = std::min<size_t>(static_cast<size_t>(o.config.train.log_every), s.losses.size());
    const std::string span = n == 1 ? "step" : fmt::format("{} steps", n);  // ("the first 1 steps")
    std::cerr << fmt::format("train: steps {}-{}: mean loss {:.4f} over the first {} -> {:.4f} over the last {}; "
                             "{:.1f} s; metrics in {}\n",
                             s.first_step, s.last_step, s.first_loss, span, s.last_loss, span,
                             std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count(),
                             o.metrics.string());
  }
  return s.stopped_by_signal ? 128 + s.stopped_by_signal : 0;  // (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP, as shells say)
}

}  // namespace

}  // namespace bertc::driver
