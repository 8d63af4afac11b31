// bertc compile (see compile.h).
#include "driver/compile.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "codegen/bertx_file.h"
#include "codegen/host_compile.h"
#include "codegen/render.h"
#include "cuda/compile_program.h"
#include "data/vocab_identity.h"
#include "driver/output_file.h"
#include "driver/report.h"
#include "driver/training_executable.h"
#include "ir/printer.h"
#include "passes/pipeline.h"
#include "run_config/config.h"
#include "run_folder/stop_request.h"
#include "train/data_parallel.h"
#include "train/profile.h"
#include "train/step_figures.h"
#include "train/trainer.h"

namespace bertc::driver {
namespace {

// The config file's text, kept in a .bertx beside the program compiled from it.
std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Renders and compiles the program's kernels for the config's arch as `images`, with a line on
// stderr before and after (a cold compile of BERT-base takes seconds).
codegen::CompiledProgram compile_kernels(const passes::TrainingProgram& p, const run_config::Config& config,
                                         cuda::ImageKind images = cuda::ImageKind::Cubin) {
  cuda::CompileSettings settings;
  settings.images = images;
  settings.cache = codegen::default_cache_folder();
  settings.runtime_kernels = train::runtime_kernels(p.step, config.train);
  settings.on_start = [&](size_t kernels, const cuda::NvrtcCompiler& c) {
    std::cerr << fmt::format("kernels: compiling {} distinct kernels for {}{} with NVRTC {} ({}), cache {}\n", kernels,
                             config.compile.arch.text(), c.ptx() ? " as PTX" : "", c.version(), c.library(),
                             settings.cache->string());
  };
  codegen::CompiledProgram out = cuda::compile_program(p, config.compile, config.name, read_text_file(config.source), settings);
  std::cerr << fmt::format("kernels: done in {:.2f} s ({} from the cache)\n", out.stats.seconds, out.stats.cache_hits);
  return out;
}

// A profile `bertc train --profile` wrote, measured against this compile's estimates (same program).
train::Profile measured_against(const std::string& path, const passes::TrainingProgram& program, const run_config::Config& config,
                                const passes::RowFractions& rows) {
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
                               config.compile.arch.gpu(), config.compile.precision, rows);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("--profile {}: {}", path, e.what()));
  }
}

// The compile report of `config` (and the compiled program, into `program`).
// `ranks`: the data-parallel ranks whose micro-batches the optimizer step averages.
// `rows`: what the data's rows leave an attention over them (measured for a report of packing).
passes::CompileReport report_of(const ir::Graph& graph, const run_config::Config& config,
                                passes::TrainingProgram* program, int64_t ranks, const passes::RowFractions& rows) {
  passes::OptimizerOptions optimizer = config.train;
  optimizer.gradient_accumulation_steps = config.train.gradient_accumulation_steps * ranks;
  return passes::compile_report(graph, config.compile, optimizer, config.train.batch_size, program, rows);
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

}  // namespace

int compile(CompileArgs args, const CompileFlags& flags, const frontend::ModelDefinition& model) {
  // NVRTC's and the host compiler's work cannot stop midway; every output is written whole or not
  // at all, so a signal ends the command at once, saying so (the compilers it runs ended with it).
  const run_folder::StopOnSignal ends_at_once(nullptr, "compile ended by a signal: no output or kernel-cache entry was "
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
  if (args.images && emit != Emit::Plan)
    throw std::invalid_argument(fmt::format("--images chooses the kernel images of a compiled program (-o FILE.bertx "
                                            "or --executable), and --emit {} writes none: drop --images",
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
  // (the report's FLOPs of an attention over rows are the data's: measured where a report is shown)
  const passes::RowFractions rows = emit == Emit::Report || (emit == Emit::Stats && args.json)
                                        ? train::config_row_fractions(config, std::cerr)
                                        : passes::RowFractions{};
  auto report = [&]() -> const passes::CompileReport& {
    if (!compiled) {
      compiled = report_of(graph, config, &program, args.ranks, rows);
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
    codegen::CompiledProgram compiled = compile_kernels(train::runnable_program(program), config,
                                                         args.images.value_or(cuda::ImageKind::Cubin));
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
        args.profile.empty() ? std::nullopt : std::optional(measured_against(args.profile, program, config, rows));
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

}  // namespace bertc::driver
