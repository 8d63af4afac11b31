// Command line of bertc and of model programs: parse arguments (CLI11), run a subcommand.
#include "tools/driver.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "codegen/host_compile.h"
#include "codegen/bertx_file.h"
#include "codegen/render.h"
#include "data/vocab_identity.h"
#include "distributed/communicator.h"
#include "distributed/gloo_communicator.h"
#include "distributed/nccl_library.h"
#include "run_config/hf_config.h"
#include "ir/out_of_memory.h"
#include "ir/printer.h"
#include "passes/pipeline.h"
#include "passes/scaling_estimate.h"
#include "passes/targets.h"
#include "train/batches.h"
#include "train/data_parallel.h"
#include "train/checkpoint.h"
#include "train/evaluate.h"
#include "train/finetune.h"
#include "runtime/cuda_driver.h"
#include "runtime/device_registry.h"
#include "reference/blas.h"
#include "support/checked_stdout.h"
#include "support/file_errors.h"
#include "support/safetensors.h"
#include "train/profile.h"
#include "train/stop_request.h"
#include "train/trainer.h"
#include "tools/check.h"
#include "tools/compile_flags.h"
#include "tools/device_choice.h"
#include "tools/export_command.h"
#include "tools/finetune_command.h"
#include "tools/prepare_data.h"
#include "tools/vocab_command.h"
#include "tools/estimate.h"
#include "tools/file_info.h"
#include "tools/output_file.h"
#include "tools/training_executable.h"
#include "tools/report.h"
#include "tools/cli_bounds.h"
#include "tools/memory_advice.h"
#include "support/resolved_path.h"
#include "support/shell_word.h"

namespace bertc::tools {
namespace {

// From CMake's project(VERSION).
constexpr const char* kBertcVersion = BERTC_VERSION;

// What bertc compile writes (--emit).
enum class Emit { Ir, StepIr, OptimizerIr, Report, Stats, Params, Cuda, Plan };
BERTC_ENUM_NAMES(Emit, {Emit::Ir, "ir"}, {Emit::StepIr, "step-ir"}, {Emit::OptimizerIr, "optimizer-ir"},
                 {Emit::Report, "report"}, {Emit::Stats, "stats"}, {Emit::Params, "params"}, {Emit::Cuda, "cuda"},
                 {Emit::Plan, "plan"})

struct CompileArgs {
  std::string config;
  std::string emit_text = "ir";  // as given; emit() is what it names
  bool emit_given = false;
  std::string output;
  bool json = false;
  bool report = false;  // --report
  std::string profile;  // --profile: a bertc train --profile JSON to show against the estimates
  bool executable = false;  // --executable: -o is a training executable with the program inside
  int64_t ranks = 1;        // --ranks: data-parallel ranks a compiled program trains on
};

// The config file's text, kept in a .bertx beside the program compiled from it.
std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Renders and compiles the program's kernels for the config's arch, with a line on stderr
// before and after (a cold compile of BERT-base takes seconds).
codegen::CompiledProgram compile_kernels(const passes::TrainingProgram& p, const run_config::Config& config) {
  codegen::CompileSettings settings;
  settings.cache = codegen::default_cache_folder();
  settings.runtime_kernels = train::runtime_kernels(p.step, config.train);
  settings.on_start = [&](size_t kernels, const codegen::NvrtcCompiler& c) {
    std::cerr << fmt::format("kernels: compiling {} distinct kernels for {} with NVRTC {} ({}), cache {}\n", kernels,
                             config.compile.arch.text(), c.version(), c.library(), settings.cache->string());
  };
  codegen::CompiledProgram out = codegen::compile_program(p, config.compile, config.name, read_text_file(config.source), settings);
  std::cerr << fmt::format("kernels: done in {:.2f} s ({} from the cache)\n", out.stats.seconds, out.stats.cache_hits);
  return out;
}

// A profile `bertc train --profile` wrote, measured against this compile's estimates (same program).
train::Profile measured_against(const std::string& path, const passes::TrainingProgram& program, const run_config::Config& config) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("--profile {}: cannot open it", path));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("--profile {}: not JSON ({})", path, e.what()));
  }
  try {
    const codegen::RenderTarget target = codegen::render_target(config.compile);
    const codegen::GraphKernels step = codegen::render_graph(program.step, target);
    const codegen::GraphKernels optimizer = codegen::render_graph(program.optimizer, target);
    return train::estimate_for(train::profile_from_json(j),
                               {{"step", &program.step, &step}, {"optimizer", &program.optimizer, &optimizer}},
                               config.compile.arch.gpu(), config.compile.precision);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("--profile {}: {}", path, e.what()));
  }
}

// The compile report of `config` (and the compiled program, into `program`).
// `ranks`: the data-parallel ranks whose micro-batches the optimizer step averages.
passes::CompileReport report_of(const ir::Graph& graph, const run_config::Config& config,
                                passes::TrainingProgram* program = nullptr, int64_t ranks = 1) {
  passes::OptimizerOptions optimizer = config.train;
  optimizer.gradient_accumulation_steps = config.train.gradient_accumulation_steps * ranks;
  return passes::compile_report(graph, config.compile, optimizer, config.train.batch_size, program);
}
// An option given an empty value (--data "" from an unset variable in a script), said: it read as
// the option left out, and the config's default data, vocabulary or folder was used without a word.
std::string empty_value_given(const CLI::App& app) {
  std::vector<const CLI::App*> commands{&app};
  for (const CLI::App* sub : app.get_subcommands()) commands.push_back(sub);
  for (const CLI::App* command : commands)
    for (const CLI::Option* option : command->get_options()) {
      if (option->count() == 0 || option->get_expected_min() == 0) continue;  // (not given, or a flag)
      for (const std::string& value : option->results())
        if (value.find_first_not_of(" \t") == std::string::npos)  // (" " too: a folder named by a space)
          return fmt::format("{} \"{}\": an empty value (an unset variable in a script?): give {} a value{}",
                             option->get_name(), value, option->get_name(),
                             option->get_required() ? "" : ", or leave it out for its default");
    }
  return "";
}

// A compiled program reads its config's relative [train] data and vocab from its own folder when it
// trains: said at compile time where they are not there (compile found them from the config's
// folder, or the working directory for a config from a stream, and training then did not).
void warn_paths_from_program_folder(const run_config::Config& config, const std::string& output) {
  const std::filesystem::path folder = std::filesystem::path(output).parent_path();
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"data", config.train.data}, {"vocab", config.train.vocab}}) {
    std::error_code ec;
    if (value.empty() || std::filesystem::path(value).is_absolute() || std::filesystem::exists(folder / value, ec))
      continue;
    std::cerr << fmt::format("compile: warning: [train] {} = \"{}\" is relative, and the compiled program reads it "
                             "from its own folder, as {}, which is not there: train it with --{} PATH, or put an "
                             "absolute path in the config and compile again\n",
                             key, value, (folder / value).string(), key);
  }
}

// The vocabulary a compiled program is for: the config's, which training it must use too; said.
std::map<std::string, std::string> vocab_of_program(const run_config::Config& config) {
  try {
    const data::Vocab vocab = data::Vocab::load(config.resolve(config.train.vocab));
    std::cerr << "compile: vocab " << vocab.describe() << ": training the program checks it has this one\n";
    return data::vocab_metadata(data::record_of(vocab));
  } catch (const data::DataError& e) {
    std::cerr << fmt::format("compile: the program records no vocabulary, and training it checks none ({})\n", e.what());
    return {};
  }
}

std::string lower_case(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return name;
}

// The training data as an input --metrics (or --profile-out) must not be written onto: a file
// itself; of a folder (read by name: .txt, .txt.gz, HDF5 shards), an output of a name it reads,
// there now or not (a new one would be read as training text by the next run on the folder).

std::string data_read_at(const std::filesystem::path& data, const std::filesystem::path& metrics) {
  std::error_code ec;
  if (!std::filesystem::is_directory(data, ec)) return data.string();
  const std::string name = lower_case(metrics.filename().string());
  // (as the folder's reader takes them: whatever their case)
  const bool read = name.ends_with(".txt") || name.ends_with(".txt.gz") || name.ends_with(".hdf5") || name.ends_with(".h5");
  return read ? data.string() : std::string();
}

int compile(CompileArgs args, const CompileFlags& flags, const frontend::ModelDefinition& model) {
  // NVRTC's and the host compiler's work cannot stop midway; every output is written whole or not
  // at all, so a signal ends the command at once, saying so (the compilers it runs ended with it).
  const train::StopOnSignal ends_at_once(nullptr, "compile ended by a signal: no output or kernel-cache entry was "
                                                  "half-written (each is written whole or not at all); run the same "
                                                  "command again");
  run_config::Config config = run_config::load_config(args.config, model.extra_keys);
  config.compile = resolve_here(flags.apply(config.compile));
  args.output = through_output_link(args.output);  // (a link given to -o: the output goes where it leads)
  refuse_checkpoint_name(args.output, "-o", "a compiler's output");
  refuse_output_onto_input(args.output, "-o", {{args.config, "the config"},
                                               {config.train.vocab.empty() ? std::string()
                                                                            : config.resolve(config.train.vocab).string(),
                                                "the vocabulary"}});
  if (args.report) {
    if (args.emit_given && args.emit_text != "report")
      throw std::invalid_argument(fmt::format("--report is --emit report, and --emit {} asks for another: give one", args.emit_text));
    args.emit_text = "report";
    args.emit_given = true;
  }
  if (!args.emit_given && (args.output.ends_with(".bertx") || args.executable)) args.emit_text = "plan";
  if (args.executable && (args.emit_text != "plan" || args.output.empty()))
    throw std::invalid_argument("--executable writes the compiled program inside a training executable: give it a "
                                "name with -o NAME, and no --emit");
  const Emit emit = ir::enum_named<Emit>(args.emit_text);  // CLI11 checked it is one
  refuse_dangling_link(args.output, "-o");
  refuse_replacing_other_than_compile_output(args.output, emit != Emit::Plan ? CompileOutput::Text
                                                          : args.executable ? CompileOutput::Executable
                                                                            : CompileOutput::Program);
  // (ranks x the micro-batches' sequences is the optimizer's divisor: past 2^64 it wrapped, to 1 for
  // --ranks 93876560171549881 at accumulation 393, and the program averaged over nothing)
  const int64_t per_rank = config.train.batch_size * config.train.gradient_accumulation_steps;  // (<= 2^31: checked)
  if (args.ranks > run_config::kMostSequencesAStep / per_rank)
    throw std::invalid_argument(fmt::format("--ranks {} x [train] batch_size {} x gradient_accumulation_steps {} is more "
                                            "than 2^31 sequences a step: give --ranks {} or fewer",
                                            args.ranks, config.train.batch_size, config.train.gradient_accumulation_steps,
                                            run_config::kMostSequencesAStep / per_rank));
  if (args.ranks != 1 && emit != Emit::Plan)
    throw std::invalid_argument(fmt::format(
        "--ranks compiles a program for data-parallel training, written with -o FILE.bertx (or --executable -o NAME) "
        "and no --emit {0} or --report: drop --ranks for the {0} (a rank's plan is the same, but for its optimizer "
        "averaging over the ranks)",
        args.emit_text));
  if (args.json && emit != Emit::Report && emit != Emit::Stats && emit != Emit::Params)
    throw std::invalid_argument(fmt::format("--json writes report, stats or params; --emit {} has no JSON form",
                                            args.emit_text));
  if (!args.profile.empty() && emit != Emit::Report)
    throw std::invalid_argument(fmt::format("--profile shows measured times in the compile report, and --emit {} is "
                                            "not the report: add --report",
                                            args.emit_text));
  if (emit != Emit::Plan && args.output.ends_with(".bertx"))
    throw std::invalid_argument(fmt::format("{} would hold --emit {} text, not a compiled plan: drop --emit (a .bertx "
                                            "output implies plan) or name the file otherwise",
                                            args.output, args.emit_text));
  if (emit == Emit::Plan && config.finetune_section)
    throw std::invalid_argument(fmt::format("{}: a fine-tuning config compiles a shape per sequence-length bucket, "
                                            "and a .bertx holds one training program: fine-tune from the config "
                                            "(bertc finetune {}); its IR, kernels and report compile as usual",
                                            args.config, args.config));
  // The forward graph as built (ir, params, stats in text) is what the compile flags shape only
  // through dropout: the others, given, are said to change nothing here (a recompute budget no plan
  // fits went unsaid, where step-ir and report refused it).
  if (emit == Emit::Ir || emit == Emit::Params || (emit == Emit::Stats && !args.json)) {
    std::vector<std::string> unused;
    for (const std::string& f : flags.given())
      if (f != "--dropout" && f != "--print-ir-after-all" && f != "--dump-ir") unused.push_back(f);
    if (!unused.empty())
      std::cerr << fmt::format("compile: note: {} shape{} the compiled step, and --emit {} shows the forward graph as "
                               "built, which {} change: --emit step-ir or --report shows {} effect\n",
                               fmt::join(unused, ", "), unused.size() == 1 ? "s" : "", args.emit_text,
                               unused.size() == 1 ? "it does not" : "they do not", unused.size() == 1 ? "its" : "their");
  }
  const ir::Graph graph = frontend::build_model(model, config.model_settings());
  // The pipeline, run once when what is emitted needs it, and always for --dump-ir and
  // --print-ir-after-all (they show every stage whatever is emitted).
  passes::TrainingProgram program;
  std::optional<passes::CompileReport> compiled;
  auto report = [&]() -> const passes::CompileReport& {
    if (!compiled) {
      compiled = report_of(graph, config, &program, args.ranks);
      note_smallest_plan(*compiled, model, config);
    }
    return *compiled;
  };
  refuse_output_among_text(config.compile.dump_ir, "--dump-ir", "stages.txt");
  refuse_checkpoint_name(config.compile.dump_ir, "--dump-ir", "a folder of IR");
  refuse_output_in_dump(args.output, config.compile.dump_ir);
  if (!config.compile.dump_ir.empty() || config.compile.print_ir_after_all) report();
  const bool gpu_arch = config.compile.arch.sm() != 0;
  std::string text;
  if (emit == Emit::Ir) {
    text = ir::print(graph);
  } else if (emit == Emit::Plan) {
    if (args.output.empty()) throw std::runtime_error("--emit plan writes a .bertx file: give it with -o FILE.bertx");
    refuse_console(args.output, "-o", args.executable ? "a training executable" : "a compiled program (.bertx)");
    report();
    // As training runs it (with the values it reads as outputs), so that bertc train FILE.bertx
    // runs it as compiled.
    codegen::CompiledProgram compiled = compile_kernels(train::runnable_program(program), config);
    compiled.model_program = model.name;
    compiled.ranks = args.ranks;
    compiled.vocab = vocab_of_program(config);
    if (!args.executable) {
      codegen::write_bertx(args.output, compiled);
      std::cerr << fmt::format("wrote {}\n", args.output);
      warn_paths_from_program_folder(config, args.output);
      return 0;
    }
    write_training_executable(args.output, codegen::encode_bertx(compiled));
    warn_paths_from_program_folder(config, args.output);
    std::cerr << fmt::format("wrote {}: a training executable of {} for {} ({:.1f} MiB); run {} train (--data, --vocab, "
                             "--device, ...), --help says what it holds\n",
                             args.output, config.name, config.compile.arch.text(),
                             static_cast<double>(std::filesystem::file_size(args.output)) / (1 << 20), args.output);
    return 0;
  } else if (emit == Emit::Cuda) {
    // Without a GPU arch the listing shows the kernels the host emulation runs (sm_61's).
    report();
    const codegen::RenderTarget target = codegen::render_target(config.compile);
    text = codegen::cuda_listing(codegen::render_graph(program.step, target), codegen::render_graph(program.optimizer, target));
  } else if (emit == Emit::Report) {
    report();
    const std::optional<train::Profile> measured =
        args.profile.empty() ? std::nullopt : std::optional(measured_against(args.profile, program, config));
    const std::optional<codegen::CompiledProgram> kernels =
        gpu_arch ? std::optional(compile_kernels(program, config)) : std::nullopt;
    if (args.json) {
      nlohmann::json j = report_json(*compiled);
      if (kernels) j["kernels"] = kernels_json(*kernels);
      if (measured) j["profile"] = train::profile_json(*measured);
      text = j.dump(2) + "\n";
    } else {
      text = report_text(*compiled, config.name) +
             (kernels ? kernels_text(*kernels)
                      : "\nkernels: not compiled (arch none): pass --arch sm_XX for their registers, shared memory "
                        "and spills\n") +
             (measured ? fmt::format("\nmeasured ({}), against this report's estimates:\n{}", args.profile,
                                     train::profile_table(*measured))
                       : "");
    }
  } else if (emit == Emit::StepIr || emit == Emit::OptimizerIr) {
    report();
    text = ir::print(emit == Emit::StepIr ? program.step : program.optimizer);
  } else if (emit == Emit::Stats) {
    auto stats = stats_json(config, model.name, graph);
    if (args.json) stats["report"] = report_json(report());
    text = args.json ? stats.dump(2) + "\n" : stats_text(stats);
  } else {  // params
    auto params = params_json(graph);
    text = args.json ? params.dump(2) + "\n" : params_text(params);
  }
  write_output(args.output, text);
  return 0;
}

// A path given on the command line, else the config's (relative to the config file).
std::filesystem::path chosen_path(const std::string& flag, const run_config::Config& c, const std::string& from_config) {
  return flag.empty() ? c.resolve(from_config) : std::filesystem::path(flag);
}

struct TrainArgs {
  std::string config, data, vocab, device = "auto", checkpoint_dir, metrics, init, batch_size;
  int64_t steps = 0, until = 0;
  std::optional<uint64_t> device_memory;
  std::optional<int64_t> profile;
  std::string profile_out;
  bool resume = false, eager = false, autotune = false;
};

// While it lives, std::cerr says nothing (a data-parallel rank other than 0: rank 0 reports for
// all); errors are printed after it is gone.
class QuietStderr {
 public:
  explicit QuietStderr(bool quiet) : saved_(quiet ? std::cerr.rdbuf(&null_) : nullptr) {}
  ~QuietStderr() {
    if (saved_) std::cerr.rdbuf(saved_);
  }
  QuietStderr(const QuietStderr&) = delete;
  QuietStderr& operator=(const QuietStderr&) = delete;

 private:
  struct Null : std::streambuf {
    int overflow(int c) override { return c; }
  } null_;
  std::streambuf* saved_;
};

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

// The config a compiled program was compiled from, with its options; `source` (the .bertx, or the
// training executable carrying the program) names it in messages, and its folder is where the
// config's relative paths start. Refuses another model program's, and compile flags.
run_config::Config compiled_config(const codegen::CompiledProgram& p, const std::string& source, const CompileFlags& flags,
                                 const frontend::ModelDefinition& model) {
  if (p.model_program != model.name)
    throw std::invalid_argument(fmt::format("{}: compiled by the model program of '{}', and this is '{}''s: run it "
                                            "with the program that compiled it (bertc for bert; a bertc_add_model "
                                            "program for its model)",
                                            source, p.model_program, model.name));
  run_config::Config config = run_config::parse_config(p.config_text, source, model.extra_keys);
  config.name = p.model;
  config.compile = p.options;
  // (the debug flags show the compile's stages, which a compiled program has behind it)
  for (const std::string& f : flags.given())
    if (f == "--dump-ir" || f == "--print-ir-after-all")
      throw std::invalid_argument(fmt::format("{}: {} shows the stages of compiling, and {} is compiled already: "
                                              "compile its config with it (bertc compile CONFIG {} ...)",
                                              source, f, source, f == "--dump-ir" ? "--dump-ir DIR" : f));
  // (a flag that gives the program's own setting again changes nothing: taken)
  if (const std::vector<std::string> changed = flags.changes(p.options); !changed.empty()) {
    // (--arch none: no compiled program holds no kernels, so "compile it again" was refused; the
    // program's own kernels run on the host device as they are)
    // (--arch auto where no GPU is: none, as compile resolves it)
    // (the arch alone: resolving every option refused a budget with advice to add --recompute,
    // which a compiled program refuses in turn)
    if (const passes::Arch asked = flags.apply(p.options).arch; arch_here(asked).text() == "none")
      throw std::invalid_argument(fmt::format(
          "{}: --arch {} asks for no GPU's kernels{}, and a compiled program holds kernels built for one arch ({}'s, "
          "which the host and PTX devices run as they are): leave --arch out, or give the config in place of the "
          "file with --arch {}",
          source, asked.text(), asked.is_auto() ? " (auto, and this machine has no GPU)" : "", p.options.arch.text(),
          asked.text()));
    throw std::invalid_argument(fmt::format("{}: {} would change the compiled program ({} for {}, precision {}, recompute "
                                            "{}): compile it again with that setting (bertc compile CONFIG ... -o "
                                            "FILE.bertx, or --executable -o NAME), or use the config; or leave the "
                                            "flag out",
                                            source, fmt::join(changed, ", "), p.model, p.options.arch.text(),
                                            ir::enum_name(p.options.precision), ir::enum_name(p.options.recompute)));
  }
  return config;
}

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

// The compiled program a file holds: a .bertx (known by its magic, whatever its name), or a
// training executable's; nullopt for anything else (a config).
std::optional<codegen::CompiledProgram> compiled_program_in(const std::string& path) {
  if (codegen::is_bertx(path)) return codegen::read_bertx(path);
  // (A file named .bertx that is none: said as such, not read as a config whose errors would say
  // what a TOML file lacks.)
  if (std::filesystem::path(path).extension() == ".bertx" && support::non_regular_kind(path).empty()) {
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(path, ec);
    if (!ec)
      throw std::invalid_argument(fmt::format("{}: named .bertx, and not a compiled program ({}): compile it again "
                                              "(bertc compile CONFIG --arch ARCH -o {})",
                                              path,
                                              bytes == 0 ? "it is empty" : fmt::format("{} bytes, without its header",
                                                                                       bytes),
                                              path));
  }
  if (std::optional<std::string> bytes = embedded_program(path))
    return codegen::decode_bertx(*bytes, path, /*in_executable=*/true);
  return std::nullopt;
}

// The running executable's path (what messages name for its embedded program).
std::string self_path(const char* argv0) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(argv0) : self.string();
}

// A config for training from `init` (--init): a Hugging Face folder's config.json gives [model].
run_config::Config load_config_for(const std::string& path, const std::string& init, const frontend::ModelDefinition& model) {
  run_config::Config config = run_config::load_config(path, model.extra_keys, /*model_required=*/false);
  train::refuse_run_folder_as_weights(init, "--init");
  run_config::take_model_from(config, init, model.name);
  return config;
}

// A compiled program's --init must record the model it was compiled for, where it records one (a
// folder's config.json, a checkpoint's model record), as a config's --init gives its [model]: the
// weights of another model loaded where names and shapes allow (a deeper model's first layers,
// another activation or layer-norm epsilon) and trained silently as this one.
void refuse_init_of_another_model(const run_config::Config& compiled, const std::string& init,
                                  const frontend::ModelDefinition& model, const std::string& source) {
  train::refuse_run_folder_as_weights(init, "--init");
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

// A data-parallel rank's training: an error on any rank stops every rank (the others would wait
// for it until rank_timeout), naming the rank that met it. `embedded`: the program this
// executable carries (bertc compile --executable), trained when no config is given.
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
  if (world->size() == 1) return run();
  try {
    return run();
  } catch (const std::exception& e) {
    const bool memory = dynamic_cast<const ir::OutOfMemory*>(&e);
    std::cerr << fmt::format("bertc: rank {} of {}: error: {}{}\n", world->rank(), world->size(), e.what(),
                             memory ? ": " + tools::memory_advice("train", args.config, compiled.has_value(), model).text : "")
              << std::flush;
    world->abort(1);
  }
  return 1;  // not reached: abort() stops the process
}

int train_rank(const TrainArgs& args, const CompileFlags& flags, const frontend::ModelDefinition& model,
               run_config::Config config, std::shared_ptr<distributed::Communicator> world,
               std::shared_ptr<const codegen::CompiledProgram> compiled) {
  const QuietStderr quiet(world->rank() != 0);
  train::TrainOptions o;
  o.world = world;
  o.config = std::move(config);
  if (!compiled) o.config.compile = resolve_here(flags.apply(o.config.compile));
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
    if (const std::string name = lower_case(o.profile_out.filename().string());
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

struct EvalArgs {
  std::string config, init, batch, dump_grads, dump_logits;
};

int eval(const EvalArgs& args, const frontend::ModelDefinition& model) {
  // Seconds of the CPU reference and a write done whole or not at all: a signal ends it at once,
  // the file being written removed.
  const train::StopOnSignal ends_at_once(nullptr, "eval ended by a signal: no dump was written (one being written is "
                                                  "removed); run the same command again");
  if (codegen::is_bertx(args.config) || embedded_program(args.config))
    throw std::invalid_argument(fmt::format("{}: a compiled training program (dropout on); eval runs the model without "
                                            "dropout on the CPU reference, built from a config: bertc eval CONFIG "
                                            "(bertc info shows the config a compiled program holds)",
                                            args.config));
  // (Two outputs of one name: the second written would replace the first.)
  if (std::error_code ec; !args.dump_logits.empty() && !args.dump_grads.empty() &&
                          (support::resolved_path(args.dump_logits) ==
                               support::resolved_path(args.dump_grads) ||
                           std::filesystem::equivalent(args.dump_logits, args.dump_grads, ec)))
    throw std::invalid_argument(fmt::format("--dump-logits {} and --dump-grads {} name the same file, and each writes "
                                            "one of its own (the second would replace the first): give two names",
                                            args.dump_logits, args.dump_grads));
  for (const auto& [output, option, format] : {std::tuple{args.dump_grads, "--dump-grads", "bertc-gradients"},
                                               std::tuple{args.dump_logits, "--dump-logits", "bertc-logits"}}) {
    refuse_console(output, option, "a safetensors file");
    refuse_output_onto_input(output, option, {{args.init, "--init"}, {args.batch, "--batch"}, {args.config, "the config"}});
    refuse_replacing_another_kind(output, option, format);
  }
  const run_config::Config config = load_config_for(args.config, args.init, model);
  const train::EvalResult r = train::evaluate_batch(model, config, args.init, args.batch);
  for (const std::string& note : r.notes) std::cerr << note << "\n";
  std::cerr << (r.vocab ? fmt::format("vocab: {} (the batch's; checked against the weights' where they record one)\n", r.vocab->describe())
                        : "vocab: the batch records none (an older bertc batch): nothing shows it is the weights'\n");
  for (const auto& [name, value] : r.losses) std::cout << fmt::format("{} {:.9g}\n", name, value);
  // --dump-logits and --dump-grads: named tensors as a safetensors file of a format.
  auto dump = [](const std::string& path, const std::map<std::string, support::HostTensor>& tensors,
                 const std::string& what) {
    if (path.empty()) return;
    support::Safetensors file;
    for (const auto& [name, t] : tensors) file.tensors[name] = support::to_stored(t);
    file.metadata["format"] = "bertc-" + what;
    support::write_safetensors(path, file);
    std::cerr << fmt::format("{} ({} tensors) written to {}\n", what, tensors.size(), path);
  };
  dump(args.dump_logits, r.logits, "logits");
  dump(args.dump_grads, r.gradients, "gradients");
  return 0;
}

struct BatchArgs {
  std::string config, data, vocab, output;
  int64_t index = 0;
};

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

// Writes micro-batch `index` of the config's training stream, the input bertc eval reads (of a
// [finetune] config: a batch of its task examples, task_batch).
int batch(const BatchArgs& given, const frontend::ModelDefinition& model) {
  BatchArgs args = given;
  const train::StopOnSignal ends_at_once(nullptr, "batch ended by a signal: nothing was written (a file being "
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
    std::cerr << fmt::format("batch: warning: the data holds {} micro-batches of {} (its {} examples), and micro-batch "
                             "{} is from pass {} over them\n",
                             per_pass, config.train.batch_size, stream.examples(), args.index,
                             args.index / per_pass + 1);
  support::Safetensors file = train::batch_to_safetensors(stream.batch(args.index));
  write_batch_file(file, vocab, config.train.do_lower_case, args.output);
  std::cerr << fmt::format("micro-batch {} written to {}\n", args.index, args.output);
  return 0;
}

int info(bool json, const std::string& bertx, const frontend::ModelDefinition& model) {
  if (!bertx.empty()) {
    std::error_code ec;
    if (std::filesystem::is_directory(bertx, ec)) {
      describe_folder(bertx, json, std::cout);
      return 0;
    }
    if (const std::string kind = support::non_regular_kind(bertx); !kind.empty())
      throw std::invalid_argument(fmt::format("{}: {}, not a .bertx or a training executable: give the file itself",
                                              bertx, kind));
    const std::optional<codegen::CompiledProgram> p = compiled_program_in(bertx);
    if (!p) {
      describe_safetensors(bertx, json, std::cout);
      return 0;
    }
    std::cout << (json ? bertx_json(*p).dump(2) + "\n" : bertx_text(*p, bertx));
    return 0;
  }
  const runtime::CudaDriverProbe driver = runtime::probe_cuda_driver();
  auto j = info_json(driver, codegen::probe_nvrtc_libraries(), runtime::find_cublas(driver.version));
  const distributed::Launch launch = distributed::detect_launch();
  j["mpi"] = {{"built", !distributed::mpi_library_version().empty()}, {"version", distributed::mpi_library_version()},
              {"launcher", launch.launcher.empty() ? "none" : launch.launcher}, {"rank", launch.rank},
              {"ranks", launch.size}};
  j["gloo"] = {{"built", !distributed::gloo_library_version().empty()}, {"version", distributed::gloo_library_version()}};
  const distributed::NcclProbe nccl = distributed::find_nccl();
  j["nccl"] = {{"found", nccl.library.loaded()}, {"path", nccl.library.path()}, {"origin", nccl.origin},
               {"version", nccl.library.loaded() ? distributed::nccl_version_text(nccl.version) : ""}, {"tried", nccl.tried}};
  j["model"] = model.name;
  std::cout << (json ? j.dump(2) + "\n" : fmt::format("model        {}: {}\n", model.name, model.description) + info_text(j));
  return 0;
}

// Only bertc train runs on several ranks. Any other command that mpirun, srun or torchrun starts
// would run once per rank, each writing the same outputs (a fine-tuning run folder, shards, a
// vocabulary): refused on every rank, before anything is read or written.
void refuse_several_ranks(const CLI::App& command) {
  const distributed::Launch launch = distributed::detect_launch();
  if (launch.size <= 1) return;
  const std::string name = command.get_name();
  // Variables left set in a shell (no launcher at all) are unset; a launcher's ranks run without it.
  const std::string fix = launch.launcher == "RANK/WORLD_SIZE"
                              ? fmt::format("WORLD_SIZE={} is set in the environment: run it with WORLD_SIZE and RANK "
                                            "unset (env -u WORLD_SIZE -u RANK bertc {} ...)",
                                            launch.size, name)
                              : "run it without the launcher";
  throw std::invalid_argument(fmt::format(
      "bertc {} runs as one process, and this is rank {} of {} ({}){}: {} (only bertc train trains on several ranks)",
      name, launch.rank, launch.size, launch.launcher,
      name == "finetune" ? "; fine-tuning on several ranks is not supported yet" : "", fix));
}

// The --help text of a training executable: what it holds and how to run it.
std::string executable_description(const std::string& program, const codegen::CompiledProgram& p) {
  std::string config;
  std::istringstream lines(p.config_text);
  for (std::string line; std::getline(lines, line);) config += "    " + line + "\n";
  return fmt::format("{}: a bertc training executable: {} compiled for {} (precision {}, recompute {}) by bertc {}, "
                     "kernels by NVRTC {}. `{} train` trains it on a GPU of that arch (or --device host, the "
                     "emulation) with no compiler; its config's relative paths are from this executable's folder "
                     "(--data and --vocab name others). Compiled from this config:\n{}",
                     program, p.model, p.options.arch.text(), ir::enum_name(p.options.precision),
                     ir::enum_name(p.options.recompute), kBertcVersion, p.nvrtc_version, program, config);
}

}  // namespace

int run_driver(int argc, char** argv, const frontend::ModelDefinition& model) {
  reference::one_blas_thread_under_address_limit(argv);  // (may execute the program again, at once)
  train::take_stop_signals();  // (first: before any thread is started, by bertc or a library)
  support::CheckedStdout checked_stdout;
  // A file size limit (ulimit -f, a batch system's) makes a write past it fail with EFBIG, which
  // every writer reports and cleans up after as it does a full disk, instead of killing the
  // process halfway through a file (SIGXFSZ's default).
  std::signal(SIGXFSZ, SIG_IGN);
  const std::string program = std::filesystem::path(argv[0]).filename().string();
  const std::string self = self_path(argv[0]);
  std::optional<codegen::CompiledProgram> embedded;
  try {
    if (std::optional<std::string> bytes = embedded_program())
      embedded = codegen::decode_bertx(*bytes, self, /*in_executable=*/true);
  } catch (const std::exception& e) {
    std::cerr << fmt::format("{}: error: {}\n", program, e.what());
    return 1;
  }
  CLI::App app(embedded ? executable_description(program, *embedded)
                        : fmt::format("{}: {} (bertc, a JIT training compiler for BERT)", program, model.description),
               program);
  app.set_version_flag("--version", std::string("bertc ") + kBertcVersion);
  app.require_subcommand(1);

  CompileArgs compile_args;
  CLI::App* compile_cmd = app.add_subcommand("compile", "Build the model's training graph from a TOML config");
  compile_cmd->add_option("config", compile_args.config, "TOML config ([model] [train] [compile])")
      ->required()
      ->check(CLI::ExistingFile);
  compile_cmd->add_option("--emit", compile_args.emit_text,
                           "What to write: ir (forward graph), step-ir (forward, backward, accumulation, compiled), "
                           "optimizer-ir, report (passes, kernels, FLOPs, memory, estimate), stats, params, cuda (every "
                           "kernel's source), plan (the program compiled for --arch: a .bertx file); every IR "
                           "re-reads with bertc-opt. -o FILE.bertx implies plan")
      ->check(CLI::IsMember(ir::enum_choices<Emit>()))
      ->each([&](const std::string&) { compile_args.emit_given = true; });
  compile_cmd->add_flag("--report", compile_args.report, "The same as --emit report");
  compile_cmd->add_option("--profile", compile_args.profile,
                          "With the report: a per-kernel profile (bertc train --profile's JSON) of this program, each "
                          "launch's measured time next to its roofline estimate for --arch")
      ->check(CLI::ExistingFile);
  compile_cmd->add_flag("--json", compile_args.json, "Write stats or params as JSON");
  compile_cmd->add_option("-o,--output", compile_args.output, "Output file (written atomically); default stdout");
  compile_cmd->add_option("--ranks", compile_args.ranks,
                          "With -o FILE.bertx or --executable: the data-parallel ranks the program trains on (its "
                          "optimizer step averages all their micro-batches; bertc train runs it on exactly that many)")
      ->check(kCount);
  compile_cmd->add_flag("--executable", compile_args.executable,
                        "Write -o as a self-contained training executable: this program with the compiled program "
                        "inside (NAME train runs it with no compiler, NVRTC or toolkit; --help says what it holds)");
  CompileFlags compile_flags;
  compile_flags.add_to(compile_cmd);

  TrainArgs train_args;
  CLI::App* train_cmd = app.add_subcommand("train", "Train the model: on the CPU reference executor, or the compiled program on a device (--device)");
  CLI::Option* train_config =
      train_cmd
          ->add_option("config", train_args.config,
                       embedded ? "Another TOML config or .bertx than the program this executable carries"
                                : "TOML config, or a program compiled by bertc compile -o FILE.bertx (run as compiled: no "
                                  "NVRTC needed; its config's relative paths from the .bertx's folder)")
          ->check(CLI::ExistingFile);
  (void)train_config;  // (not required: train() says what is missing, and names a damaged executable)
  train_cmd->add_option("--steps", train_args.steps, "Length of the run in optimizer steps (default: [train] steps)")
      ->check(kCount);
  train_cmd->add_option("--until", train_args.until, "Stop (with a checkpoint) after this step; --resume continues")
      ->check(kCount);
  train_cmd->add_option("--data", train_args.data,
                        "Text file, folder of .txt and .txt.gz files, or folder of bertc prepare-data shards (default: "
                        "[train] data)");
  train_cmd->add_option("--vocab", train_args.vocab, "WordPiece vocab.txt (default: [train] vocab)");
  train_cmd->add_option("--device", train_args.device,
                        "auto (a usable GPU, else the CPU), cpu (the reference executor, op by op), or a device "
                        "running the compiled program: " + devices_help())
      ->check(CLI::IsMember(device_names({"auto", "cpu"})));
  train_cmd->add_option("--batch-size", train_args.batch_size,
                        "Micro-batch size ([train] batch_size), or auto: the largest micro-batch that fits the device's "
                        "free memory, keeping batch_size x gradient_accumulation_steps")
      ->check(CLI::IsMember({"auto"}) | kCount);
  train_cmd->add_option("--device-memory", train_args.device_memory,
                        "Bytes of device memory --batch-size auto plans for (default: the free memory of the device)")
      ->check(kCount);
  train_cmd->add_option("--checkpoint-dir", train_args.checkpoint_dir, "Checkpoints and metrics (default: checkpoints/NAME)");
  train_cmd->add_option("--metrics", train_args.metrics, "JSON-lines metrics file (default: CHECKPOINT_DIR/metrics.jsonl)");
  train_cmd->add_flag("--resume", train_args.resume, "Continue from the newest checkpoint in the checkpoint folder");
  train_cmd->add_flag("--autotune", train_args.autotune,
                      "Time each matrix product as a generated kernel and as cuBLAS on the device, keep the faster "
                      "(cached per GPU in the kernel cache's autotune.json)");
  train_cmd->add_flag("--eager", train_args.eager,
                      "Issue every kernel launch at every step instead of replaying the step recorded once as a "
                      "device graph (CUDA Graph); for debugging: the results are the same");
  train_cmd->add_option("--init", train_args.init,
                        "Start from these weights: a Hugging Face .safetensors or model folder (its config.json then "
                        "gives [model]), or a bertc checkpoint")
      ->check(CLI::ExistingPath);
  train_cmd->add_option("--profile", train_args.profile,
                        "Time each kernel launch of this step on the device (one wait per launch) and print the "
                        "per-kernel table: time, TFLOP/s, GB/s and the ratio to the compile report's roofline estimate")
      ->check(kCount);
  train_cmd->add_option("--profile-out", train_args.profile_out,
                        "Where --profile writes the table as JSON (default: CHECKPOINT_DIR/profile-stepSTEP.json; "
                        "bertc compile --report --profile reads it)");
  CompileFlags train_flags;
  train_flags.add_to(train_cmd);

  EvalArgs eval_args;
  CLI::App* eval_cmd = app.add_subcommand("eval", "Losses and gradients of one batch, dropout off");
  eval_cmd->add_option("config", eval_args.config, "TOML config")->required()->check(CLI::ExistingFile);
  eval_cmd->add_option("--init", eval_args.init,
                       "Weights: .safetensors with Hugging Face names (a bertc checkpoint), or a Hugging Face model "
                       "folder (its config.json then gives [model])")
      ->required()
      ->check(CLI::ExistingPath);
  eval_cmd->add_option("--batch", eval_args.batch, "Batch (.safetensors: input_ids, token_type_ids, ...)")
      ->required()
      ->check(CLI::ExistingFile);
  eval_cmd->add_option("--dump-grads", eval_args.dump_grads, "Write every param's gradient here (.safetensors)");
  eval_cmd->add_option("--dump-logits", eval_args.dump_logits,
                       "Write the logits here (.safetensors: logits, or mlm_logits and nsp_logits)");

  BatchArgs batch_args;
  CLI::App* batch_cmd = app.add_subcommand(
      "batch", "Write one micro-batch of the training data, or of a [finetune] config's task examples (input of eval)");
  batch_cmd->add_option("config", batch_args.config, "TOML config")->required()->check(CLI::ExistingFile);
  batch_cmd->add_option("--index", batch_args.index, "Micro-batch number (step * accumulation + micro)")
      ->check(kCountOrNone);
  batch_cmd->add_option("-o,--output", batch_args.output, "Output .safetensors")->required();
  batch_cmd->add_option("--data", batch_args.data,
                        "Text file, folder of .txt and .txt.gz files, or folder of bertc prepare-data shards (default: "
                        "[train] data); for a [finetune] config, task examples, .tsv or .jsonl (default: [finetune] "
                        "dev_data)");
  batch_cmd->add_option("--vocab", batch_args.vocab, "vocab.txt (default: [train] vocab)");

  std::string check_config;
  CheckOptions check_options;
  CLI::App* check_cmd = app.add_subcommand(
      "check", "Run one training step and optimizer step of the compiled program on a device and compare every "
               "kernel's results with the reference executor's (on synthetic batches)");
  check_cmd->add_option("config", check_config, "TOML config, or a compiled program (.bertx or training executable)")
      ->required()
      ->check(CLI::ExistingFile);
  check_cmd->add_option("--device", check_options.device, "The device: " + devices_help())
      ->check(CLI::IsMember(device_names({})));
  check_cmd->add_option("--tolerance", check_options.tolerance,
                        "Largest error allowed, relative to a value's largest magnitude (default 1e-3 at fp32, "
                        "5e-2 at 16-bit precisions)")
      ->check(kPositive);
  CLI::Option* check_all =
      check_cmd->add_flag("--all", check_options.all, "Print every value's error, not only those beyond tolerance");
  check_cmd
      ->add_option("--sample-blocks", check_options.sample_blocks,
                   "With --device ptx: run at most N blocks of each launch (spread over its grid) and a repeated "
                   "kernel once, and print the counts scaled to the grids and the projected step time beside the "
                   "roofline, comparing no value (for models too large to emulate whole, e.g. bert-base)")
      ->check(CLI::Range(2, 1 << 20))
      ->excludes(check_all)
      ->excludes("--tolerance");
  check_cmd
      ->add_option_function<std::string>(
          "--approx", [&](const std::string& name) { check_options.approx = ir::enum_named<ptx::ApproxResults>(name); },
          "With --device ptx: the approximate instructions' results (ex2, lg2, rsqrt, tanh, sin, cos, "
          "rcp/sqrt/div .approx): worst (default: each at the edge of the PTX ISA's error bound, so that a pass "
          "holds for any GPU's) or rounded (correctly rounded)")
      ->check(CLI::IsMember(ir::enum_choices<ptx::ApproxResults>()));
  check_cmd->add_option("--schedule-seed", check_options.schedule_seed,
                        "With --device ptx: the emulator's schedule: 0 runs blocks, warps and lanes in index order, "
                        "any other number a shuffled order of each, warps interleaved from sm_70 on (default 1); a "
                        "right kernel gives the same values under every seed")
      ->check(kCountOrNone);  // (-1 read as an unsigned number wrapped to 2^64 - 1)
  check_cmd->add_option("--resident-blocks", check_options.resident_blocks,
                        "With --device ptx and a seed other than 0: how many blocks of a launch run side by side, "
                        "their warps' turns interleaved, as a GPU's multiprocessors run them (1 to 32; default 4)")
      ->check(at_least(1, 32, ", the most blocks a multiprocessor of any GPU bertc targets runs at once"));
  CompileFlags check_flags;
  check_flags.add_to(check_cmd);

  EstimateArgs estimate_args;
  CLI::App* estimate_cmd = app.add_subcommand(
      "estimate", "Estimate data-parallel training on several GPUs and machines: step time, days and cost per "
                  "gradient compression");
  estimate_cmd->add_option("config", estimate_args.config, "TOML config")->required()->check(CLI::ExistingFile);
  estimate_cmd->add_option("--gpu", estimate_args.gpus, "GPUs of the table (p40, v100, a100, h100, ...); repeatable")
      ->capture_default_str();
  estimate_cmd->add_option("--gpus-per-machine", estimate_args.gpus_per_machine, "GPUs in each machine")
      ->check(kCount)->capture_default_str();
  estimate_cmd->add_option("--machines", estimate_args.machines, "Machines")->check(kCount)->capture_default_str();
  // (each flag's own links: a network given --within is refused by name in estimate, with both lists)
  estimate_cmd->add_option("--within", estimate_args.within,
                           fmt::format("The link between a machine's GPUs ({})",
                                       fmt::join(passes::interconnect_names(passes::LinkReach::WithinMachine), ", ")))
      ->capture_default_str();
  estimate_cmd->add_option("--between", estimate_args.between,
                           fmt::format("The link between machines ({})",
                                       fmt::join(passes::interconnect_names(passes::LinkReach::BetweenMachines), ", ")))
      ->capture_default_str();
  estimate_cmd->add_option("--compression", estimate_args.compressions,
                           "Gradient compressions to compare (default: none, fp16, powersgd at [train] powersgd_rank)")
      ->check(CLI::IsMember(ir::enum_choices<distributed::Compression>()));
  estimate_cmd->add_option("--steps", estimate_args.steps, "Optimizer steps to train (default: [train] steps)")
      ->check(kCount);
  estimate_cmd->add_option("--price", estimate_args.price,
                           "Dollars per GPU-hour (default: a cloud offer's for the GPUs that have one)")
      ->check(kNonNegative);
  estimate_cmd->add_flag("--json", estimate_args.json, "Write JSON");
  CompileFlags estimate_flags;
  estimate_flags.add_to(estimate_cmd);

  PrepareDataArgs prepare_args;
  CLI::App* prepare_cmd = add_prepare_data_command(app, prepare_args);
  ExportArgs export_args;
  CLI::App* export_cmd = add_export_command(app, export_args);

  FinetuneArgs finetune_args;
  CompileFlags finetune_flags;
  CLI::App* finetune_cmd = add_finetune_command(app, finetune_args, finetune_flags);

  VocabArgs vocab_args;
  CLI::App* vocab_cmd = add_vocab_command(app, vocab_args);

  bool info_json_flag = false;
  std::string info_file;
  CLI::App* info_cmd = app.add_subcommand("info", "Show the CUDA driver, GPUs and NVRTC libraries found, or what a "
                                                   "file or folder holds");
  info_cmd->add_option("file", info_file,
                       "What to describe: a compiled program (.bertx, a training executable), a checkpoint, a run "
                       "folder, a Hugging Face model folder, or weights")
      ->check(CLI::ExistingPath);
  info_cmd->add_flag("--json", info_json_flag, "Write JSON");

  // (--vocab= is CLI11's "1 required TEXT missing": said as the empty value it is, before parsing)
  for (int i = 1; i < argc; ++i)
    if (const std::string_view arg = argv[i]; arg.starts_with("--") && arg.ends_with("=") && arg.size() > 3) {
      const std::string name(arg.substr(0, arg.size() - 1));
      std::cerr << fmt::format("{}: error: {}= (an empty value: an unset variable in a script?): give {} a value, or "
                               "leave it out for its default\n",
                               program, name, name);
      return 1;
    }
  // (a working directory removed under the shell: every relative path fails, said as that)
  if (std::error_code ec; std::filesystem::current_path(ec).empty() && ec) {
    std::cerr << fmt::format("{}: error: the working directory no longer exists (removed while the shell was in it): "
                             "cd to an existing folder\n",
                             program);
    return 1;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (const std::string empty = empty_value_given(app); !empty.empty()) {
    std::cerr << fmt::format("{}: error: {}\n", program, empty);
    return 1;
  }
  // The command that ran, and whether it runs a compiled program: what needs less memory.
  auto memory_advice = [&] {
    const std::string command = app.get_subcommands().empty() ? "" : app.get_subcommands().front()->get_name();
    const std::string file = command == "train"      ? train_args.config
                             : command == "check"    ? check_config
                             : command == "finetune" ? finetune_args.config
                                                     : "";
    std::error_code ec;
    const bool compiled = (command == "train" && embedded && file.empty()) ||
                          (!file.empty() && std::filesystem::is_regular_file(file, ec) && codegen::is_bertx(file));
    return tools::memory_advice(command, file, compiled, model);
  };
  const int status = [&] {
    try {
      if (!*train_cmd && !*info_cmd) refuse_several_ranks(*app.get_subcommands().front());
      if (*compile_cmd) return compile(compile_args, compile_flags, model);
      if (*train_cmd) return train(train_args, train_flags, model, embedded, self);
      if (*eval_cmd) return eval(eval_args, model);
      if (*batch_cmd) return batch(batch_args, model);
      if (*check_cmd) {
        // A check writes nothing but its report (kernel-cache entries are written whole or not at
        // all): a signal ends it at once, saying so.
        const train::StopOnSignal ends_at_once(nullptr, "check ended by a signal before its verdict: nothing was "
                                                        "half-written (it writes only its report); run the same command "
                                                        "again");
        if (const std::optional<codegen::CompiledProgram> p = compiled_program_in(check_config))
          return run_check(*p, compiled_config(*p, check_config, check_flags, model), check_options, std::cout);
        run_config::Config config = run_config::load_config(check_config, model.extra_keys);
        config.compile = resolve_here(check_flags.apply(config.compile));
        return run_check(model, config, check_options, std::cout);
      }
      if (*estimate_cmd) {
        estimate_args.within_given = estimate_cmd->count("--within") > 0;
        estimate_args.between_given = estimate_cmd->count("--between") > 0;
        return estimate(estimate_args, estimate_flags, model, std::cout);
      }
      if (*prepare_cmd) return prepare_data(prepare_args, model, std::cerr);
      if (*vocab_cmd) return train_vocab(vocab_args, model, std::cerr);
      if (*finetune_cmd) return finetune(finetune_args, finetune_flags, model, std::cerr);
      if (*export_cmd) return export_checkpoint(export_args, std::cerr);
      return info(info_json_flag, info_file, model);
    } catch (const ir::OutOfMemory& e) {
      std::cerr << fmt::format("{}: error: {}: {}\n", program, e.what(), memory_advice().text);
      return 1;
    } catch (const std::bad_alloc&) {
      // (under an address-space limit, the limit is what ran out first: said, with its fix)
      rlimit as{};
      const bool limited = ::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY;
      const MemoryAdvice advice = memory_advice();
      const std::string limit = "raise or remove the limit (ulimit -v unlimited)";
      std::cerr << fmt::format("{}: error: out of host memory{}: {}\n", program,
                               limited ? fmt::format(" under the address-space limit (ulimit -v {} KiB)", as.rlim_cur / 1024)
                                       : "",
                               !limited                 ? advice.text
                               : advice.model_too_large ? advice.text + ", or " + limit
                                                        : limit + ", or " + advice.text);
      return 1;
    } catch (const support::FileError& e) {  // (a write: its fix by errno)
      const std::string fix = support::file_error_fix(e.code().value(), e.path(), e.needed());
      std::cerr << fmt::format("{}: error: {}{}\n", program, e.what(), fix.empty() ? "" : ": " + fix);
      return 1;
    } catch (const std::filesystem::filesystem_error& e) {  // (a folder made, a file moved: said without C++'s words)
      std::cerr << fmt::format("{}: error: {}\n", program, support::describe_file_error(e));
      return 1;
    } catch (const std::exception& e) {
      std::cerr << fmt::format("{}: error: {}\n", program, e.what());
      return 1;
    }
  }();
  // (output to a full disk or a closed pipe fails the command, whatever it printed)
  if (const std::string lost = checked_stdout.finish(); !lost.empty()) {
    std::cerr << fmt::format("{}: error: {}\n", program, lost);
    return 1;
  }
  return status;
}

}  // namespace bertc::tools
