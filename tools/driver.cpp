// Command line of bertc and of model programs: parse arguments (CLI11), run a subcommand.
#include "tools/driver.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "codegen/host_compile.h"
#include "codegen/program.h"
#include "codegen/render.h"
#include "ir/printer.h"
#include "passes/pipeline.h"
#include "passes/targets.h"
#include "runtime/batches.h"
#include "runtime/evaluate.h"
#include "runtime/open_device.h"
#include "runtime/safetensors.h"
#include "runtime/trainer.h"
#include "tools/check.h"
#include "tools/output_file.h"
#include "tools/report.h"

namespace bertc::tools {
namespace {

struct CompileArgs {
  std::string config;
  std::string emit = "ir";
  bool emit_given = false;
  std::string output;
  bool json = false;
};

// Compiler flags shared by compile and train; each overrides its [compile] key when given.
struct CompileFlags {
  std::optional<std::string> arch, precision, recompute, matmul;
  std::optional<int64_t> memory_budget;
  std::optional<bool> fusion, fused_attention;
  bool print_ir_after_all = false;
  std::optional<std::string> dump_ir;

  void add_to(CLI::App* cmd) {
    cmd->add_option("--arch", arch, "Target: sm_61 ... sm_90, a GPU (p40, v100, t4, a100, rtx3090, h100, h200), "
                                    "none, or auto (the GPU present)");
    cmd->add_option("--precision", precision, "auto, fp32, fp16, bf16 or fp32-fp16storage")
        ->check(CLI::IsMember({"auto", "fp32", "fp16", "bf16", "fp32-fp16storage"}));
    cmd->add_option("--recompute", recompute, "Activation recomputation: none, selective, full or auto")
        ->check(CLI::IsMember({"none", "selective", "full", "auto"}));
    cmd->add_option("--memory-budget", memory_budget, "Bytes of activations for --recompute auto")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--fusion", fusion, "Fuse ops into kernels (true/false)");
    cmd->add_option("--fused-attention", fused_attention, "One attention op per layer (true/false)");
    cmd->add_option("--matmul", matmul, "Matrix products as generated kernels, cuBLAS calls, or auto (big plain ones "
                                        "to cuBLAS)")
        ->check(CLI::IsMember({"auto", "generated", "library"}));
    cmd->add_flag("--print-ir-after-all", print_ir_after_all, "Print every stage's IR to stderr");
    cmd->add_option("--dump-ir", dump_ir, "Write every stage's IR into this folder (NN-<pass>-<graph>.ir)");
  }

  // The config's options with these flags applied and arch/precision made concrete.
  frontend::CompileOptions apply(frontend::CompileOptions o) const {
    if (arch) o.arch = *arch;
    if (precision) o.precision = *precision;
    if (recompute) o.recompute = *recompute;
    if (memory_budget) o.memory_budget = *memory_budget;
    if (fusion) o.fusion = *fusion;
    if (fused_attention) o.fused_attention = *fused_attention;
    if (matmul) o.matmul = *matmul;
    if (print_ir_after_all) o.print_ir_after_all = true;
    if (dump_ir) o.dump_ir = *dump_ir;
    const runtime::CudaDriverProbe probe = runtime::probe_cuda_driver();
    const std::string detected = probe.devices.empty() ? "none" : fmt::format("sm_{}", probe.devices[0].arch);
    return passes::resolve_options(o, detected);
  }
};

// The config file's text, kept in a .bertx beside the program compiled from it.
std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Renders and compiles the program's kernels for the config's arch, with a line on stderr
// before and after (a cold compile of BERT-base takes seconds).
codegen::CompiledProgram compile_kernels(const passes::TrainingProgram& p, const frontend::Config& config) {
  codegen::CompileSettings settings;
  settings.cache = codegen::default_cache_folder();
  settings.on_start = [&](size_t kernels, const codegen::NvrtcCompiler& c) {
    std::cerr << fmt::format("kernels: compiling {} distinct kernels for {} with NVRTC {} ({}), cache {}\n", kernels,
                             config.compile.arch, c.version(), c.library(), settings.cache->string());
  };
  codegen::CompiledProgram out = codegen::compile_program(p, config.compile, config.name, read_text_file(config.source), settings);
  std::cerr << fmt::format("kernels: done in {:.2f} s ({} from the cache)\n", out.stats.seconds, out.stats.cache_hits);
  return out;
}

bool real_arch(const frontend::CompileOptions& o) { return o.arch.rfind("sm_", 0) == 0; }

int compile(CompileArgs args, const CompileFlags& flags, const frontend::ModelDefinition& model) {
  frontend::Config config = frontend::load_config(args.config, model.extra_keys);
  config.compile = flags.apply(config.compile);
  if (!args.emit_given && args.output.ends_with(".bertx")) args.emit = "plan";
  const ir::Graph graph = frontend::build_model(model, config);
  std::string text;
  if (args.emit == "ir") {
    text = ir::print(graph);
  } else if (args.emit == "step-ir" || args.emit == "optimizer-ir" || args.emit == "report" || args.emit == "cuda" ||
             args.emit == "plan") {
    passes::TrainingProgram p;
    const passes::CompileReport report = passes::compile_report(graph, config, &p);
    if (args.emit == "plan") {
      if (args.output.empty()) throw std::runtime_error("--emit plan writes a .bertx file: give it with -o FILE.bertx");
      codegen::write_bertx(args.output, compile_kernels(p, config));
      std::cerr << fmt::format("wrote {}\n", args.output);
      return 0;
    }
    if (args.emit == "cuda") {
      // Without a GPU arch the listing shows the kernels the host emulation runs (sm_61's).
      const codegen::RenderTarget target{real_arch(config.compile) ? std::stoi(config.compile.arch.substr(3)) : 0,
                                         config.compile.matmul};
      text = codegen::cuda_listing(codegen::render_graph(p.step, target), codegen::render_graph(p.optimizer, target));
    } else if (args.emit == "report") {
      const std::optional<codegen::CompiledProgram> kernels =
          real_arch(config.compile) ? std::optional(compile_kernels(p, config)) : std::nullopt;
      if (args.json) {
        nlohmann::json j = report_json(report);
        if (kernels) j["kernels"] = kernels_json(*kernels);
        text = j.dump(2) + "\n";
      } else {
        text = report_text(report, config.name) +
               (kernels ? kernels_text(*kernels)
                        : "\nkernels: not compiled (arch none): pass --arch sm_XX for their registers, shared memory "
                          "and spills\n");
      }
    } else {
      text = ir::print(args.emit == "step-ir" ? p.step : p.optimizer);
    }
  } else if (args.emit == "stats") {
    auto stats = stats_json(config, model.name, graph);
    if (args.json) stats["report"] = report_json(passes::compile_report(graph, config));
    text = args.json ? stats.dump(2) + "\n" : stats_text(stats);
  } else {  // params
    auto params = params_json(graph);
    text = args.json ? params.dump(2) + "\n" : params_text(params);
  }
  write_output(args.output, text);
  return 0;
}

// A path given on the command line, else the config's (relative to the config file).
std::filesystem::path chosen_path(const std::string& flag, const frontend::Config& c, const std::string& from_config) {
  return flag.empty() ? c.resolve(from_config) : std::filesystem::path(flag);
}

struct TrainArgs {
  std::string config, data, vocab, device = "auto", checkpoint_dir, metrics, init, batch_size;
  int64_t steps = 0, until = 0;
  std::optional<uint64_t> device_memory;
  bool resume = false, eager = false, autotune = false;
};

// Say which device trains and why, never silently. The CUDA device is opt-in (--device cuda)
// until it has been validated on a GPU; auto stays on the CPU reference executor.
void choose_device(const std::string& device) {
  if (device == "cuda") {
    std::cerr << "device: CUDA (--device cuda; the CUDA runtime has not been validated on a GPU yet)\n";
    return;
  }
  if (device == "cpu") {
    std::cerr << "device: CPU reference executor (--device cpu)\n";
    return;
  }
  if (device == "host") {
    std::cerr << "device: the compiled plan's kernels under host emulation (--device host; slow: it checks the GPU "
                 "runtime's plan on the CPU)\n";
    return;
  }
  const runtime::CudaDriverProbe probe = runtime::probe_cuda_driver();
  if (probe.devices.empty())
    std::cerr << fmt::format("device: no usable GPU ({}); training on the CPU reference executor\n", probe.error);
  else
    std::cerr << fmt::format("device: found {} ({}), but bertc's CUDA runtime has not been validated on a GPU yet; "
                             "training on the CPU reference executor (--device cuda tries it)\n",
                             probe.devices[0].name, fmt::format("sm_{}", probe.devices[0].arch));
}

int train(const TrainArgs& args, const CompileFlags& flags, const frontend::ModelDefinition& model) {
  runtime::TrainOptions o;
  o.config = frontend::load_config(args.config, model.extra_keys);
  o.config.compile = flags.apply(o.config.compile);
  if (args.steps > 0) o.config.train.steps = args.steps;  // the schedule decays over the run's length
  if (args.batch_size == "auto") o.auto_batch = true;
  else if (!args.batch_size.empty()) o.config.train.batch_size = std::stoll(args.batch_size);
  o.device_memory = args.device_memory;
  if (o.device_memory && !o.auto_batch)
    throw std::invalid_argument("--device-memory plans --batch-size auto: pass --batch-size auto too");
  const auto& t = o.config.train;
  o.stop_after = args.until > 0 ? args.until : t.steps;
  o.data = chosen_path(args.data, o.config, t.data);
  o.vocab = chosen_path(args.vocab, o.config, t.vocab);
  o.checkpoint_dir = args.checkpoint_dir.empty() ? std::filesystem::path("checkpoints") / o.config.name
                                                 : std::filesystem::path(args.checkpoint_dir);
  o.metrics = args.metrics.empty() ? o.checkpoint_dir / "metrics.jsonl" : std::filesystem::path(args.metrics);
  o.resume = args.resume;
  o.eager = args.eager;
  o.autotune = args.autotune;
  if (o.autotune && o.config.compile.matmul != "auto")
    throw std::invalid_argument(fmt::format("--autotune chooses between generated kernels and cuBLAS per product; "
                                            "--matmul {} fixes that choice: drop one of them", o.config.compile.matmul));
  if (!args.init.empty()) o.init = args.init;
  o.live_progress = ::isatty(STDERR_FILENO) != 0;
  choose_device(args.device);
  o.device = args.device == "host" || args.device == "cuda" ? args.device : "cpu";
  if (o.autotune && o.device == "cpu")
    throw std::invalid_argument("--autotune times kernels on a device, and the CPU reference runs none: train with "
                                "--device cuda (or host, to check the mechanism)");
  // Host emulation runs the kernels of the configured arch, else sm_61's.
  const std::string& arch = o.config.compile.arch;
  o.host_sm = runtime::sm_of_arch(arch);
  o.kernel_cache = codegen::default_cache_folder();
  std::cerr << fmt::format("train: {} ({}), {} steps of {} x {} x {} tokens, {} optimizer, {} precision, checkpoints in {}\n",
                           o.config.name, model.name, t.steps, t.gradient_accumulation_steps, t.batch_size, t.seq_len,
                           t.optimizer, o.config.compile.precision, o.checkpoint_dir.string());
  const auto began = std::chrono::steady_clock::now();
  const runtime::TrainSummary s = runtime::train_model(model, o, std::cerr);
  if (!s.losses.empty())
    std::cerr << fmt::format("train: steps {}-{}: mean loss {:.4f} over the first {} steps -> {:.4f} over the last; "
                             "{:.1f} s; metrics in {}\n",
                             s.first_step, s.last_step, s.first_loss,
                             std::min<size_t>(static_cast<size_t>(o.config.train.log_every), s.losses.size()), s.last_loss,
                             std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count(),
                             o.metrics.string());
  return 0;
}

struct EvalArgs {
  std::string config, init, batch, dump_grads;
};

int eval(const EvalArgs& args, const frontend::ModelDefinition& model) {
  const frontend::Config config = frontend::load_config(args.config, model.extra_keys);
  const runtime::EvalResult r = runtime::evaluate_batch(model, config, args.init, args.batch);
  std::cout << fmt::format("mlm_loss {:.9g}\nnsp_loss {:.9g}\nloss {:.9g}\n", r.mlm_loss, r.nsp_loss, r.loss);
  if (!args.dump_grads.empty()) {
    runtime::Safetensors file;
    for (const auto& [name, grad] : r.gradients) file.tensors[name] = runtime::to_stored(grad);
    file.metadata["format"] = "bertc-gradients";
    runtime::write_safetensors(args.dump_grads, file);
    std::cerr << fmt::format("gradients of {} params written to {}\n", r.gradients.size(), args.dump_grads);
  }
  return 0;
}

struct BatchArgs {
  std::string config, data, vocab, output;
  int64_t index = 0;
};

// Writes micro-batch `index` of the config's training stream, the input bertc eval reads.
int batch(const BatchArgs& args, const frontend::ModelDefinition& model) {
  const frontend::Config config = frontend::load_config(args.config, model.extra_keys);
  const data::BatchStream stream = runtime::open_batch_stream(config, chosen_path(args.data, config, config.train.data),
                                                             chosen_path(args.vocab, config, config.train.vocab),
                                                             std::cerr);
  runtime::write_safetensors(args.output, runtime::batch_to_safetensors(stream.batch(args.index)));
  std::cerr << fmt::format("micro-batch {} written to {}\n", args.index, args.output);
  return 0;
}

int info(bool json, const std::string& bertx, const frontend::ModelDefinition& model) {
  if (!bertx.empty()) {
    const codegen::CompiledProgram p = codegen::read_bertx(bertx);
    std::cout << (json ? bertx_json(p).dump(2) + "\n" : bertx_text(p, bertx));
    return 0;
  }
  auto j = info_json(runtime::probe_cuda_driver(), codegen::probe_nvrtc_libraries());
  j["model"] = model.name;
  std::cout << (json ? j.dump(2) + "\n" : fmt::format("model        {}: {}\n", model.name, model.description) + info_text(j));
  return 0;
}

}  // namespace

int run_driver(int argc, char** argv, const frontend::ModelDefinition& model) {
  const std::string program = std::filesystem::path(argv[0]).filename().string();
  CLI::App app(fmt::format("{}: {} (bertc, a JIT training compiler for BERT)", program, model.description), program);
  app.set_version_flag("--version", "bertc 0.1.0");
  app.require_subcommand(1);

  CompileArgs compile_args;
  CLI::App* compile_cmd = app.add_subcommand("compile", "Build the model's training graph from a TOML config");
  compile_cmd->add_option("config", compile_args.config, "TOML config ([model] [train] [compile])")
      ->required()
      ->check(CLI::ExistingFile);
  compile_cmd->add_option("--emit", compile_args.emit,
                           "What to write: ir (forward graph), step-ir (forward, backward, accumulation, compiled), "
                           "optimizer-ir, report (passes, kernels, FLOPs, memory, estimate), stats, params, cuda (every "
                           "kernel's source), plan (the program compiled for --arch: a .bertx file); every IR "
                           "re-reads with bertc-opt. -o FILE.bertx implies plan")
      ->check(CLI::IsMember({"ir", "step-ir", "optimizer-ir", "report", "stats", "params", "cuda", "plan"}))
      ->each([&](const std::string&) { compile_args.emit_given = true; });
  compile_cmd->add_flag_callback("--report", [&] {
    compile_args.emit = "report";
    compile_args.emit_given = true;
  }, "The same as --emit report");
  compile_cmd->add_flag("--json", compile_args.json, "Write stats or params as JSON");
  compile_cmd->add_option("-o,--output", compile_args.output, "Output file (written atomically); default stdout");
  CompileFlags compile_flags;
  compile_flags.add_to(compile_cmd);

  TrainArgs train_args;
  CLI::App* train_cmd = app.add_subcommand("train", "Train the model: on the CPU reference executor, or the compiled program on a device (--device)");
  train_cmd->add_option("config", train_args.config, "TOML config")->required()->check(CLI::ExistingFile);
  train_cmd->add_option("--steps", train_args.steps, "Length of the run in optimizer steps (default: [train] steps)")
      ->check(CLI::PositiveNumber);
  train_cmd->add_option("--until", train_args.until, "Stop (with a checkpoint) after this step; --resume continues")
      ->check(CLI::PositiveNumber);
  train_cmd->add_option("--data", train_args.data, "Text file or folder of .txt files (default: [train] data)");
  train_cmd->add_option("--vocab", train_args.vocab, "WordPiece vocab.txt (default: [train] vocab)");
  train_cmd->add_option("--device", train_args.device,
                        "auto, cpu, cuda, or host (the compiled kernels under host emulation: a slow check of the plan)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda", "host"}));
  train_cmd->add_option("--batch-size", train_args.batch_size,
                        "Micro-batch size ([train] batch_size), or auto: the largest micro-batch that fits the device's "
                        "free memory, keeping batch_size x gradient_accumulation_steps")
      ->check(CLI::IsMember({"auto"}) | CLI::PositiveNumber);
  train_cmd->add_option("--device-memory", train_args.device_memory,
                        "Bytes of device memory --batch-size auto plans for (default: the free memory of the device)")
      ->check(CLI::PositiveNumber);
  train_cmd->add_option("--checkpoint-dir", train_args.checkpoint_dir, "Checkpoints and metrics (default: checkpoints/NAME)");
  train_cmd->add_option("--metrics", train_args.metrics, "JSON-lines metrics file (default: CHECKPOINT_DIR/metrics.jsonl)");
  train_cmd->add_flag("--resume", train_args.resume, "Continue from the newest checkpoint in the checkpoint folder");
  train_cmd->add_flag("--autotune", train_args.autotune,
                      "Time each matrix product as a generated kernel and as cuBLAS on the device, keep the faster "
                      "(cached per GPU in the kernel cache's autotune.json)");
  train_cmd->add_flag("--eager", train_args.eager,
                      "Issue every kernel launch at every step instead of replaying the step recorded once as a "
                      "device graph (CUDA Graph); for debugging: the results are the same");
  train_cmd->add_option("--init", train_args.init, "Start from a Hugging Face BertForPreTraining .safetensors")
      ->check(CLI::ExistingFile);
  CompileFlags train_flags;
  train_flags.add_to(train_cmd);

  EvalArgs eval_args;
  CLI::App* eval_cmd = app.add_subcommand("eval", "Losses and gradients of one batch, dropout off");
  eval_cmd->add_option("config", eval_args.config, "TOML config")->required()->check(CLI::ExistingFile);
  eval_cmd->add_option("--init", eval_args.init, "Weights (.safetensors, Hugging Face names)")
      ->required()
      ->check(CLI::ExistingFile);
  eval_cmd->add_option("--batch", eval_args.batch, "Batch (.safetensors: input_ids, token_type_ids, ...)")
      ->required()
      ->check(CLI::ExistingFile);
  eval_cmd->add_option("--dump-grads", eval_args.dump_grads, "Write every param's gradient here (.safetensors)");

  BatchArgs batch_args;
  CLI::App* batch_cmd = app.add_subcommand("batch", "Write one micro-batch of the training data (input of eval)");
  batch_cmd->add_option("config", batch_args.config, "TOML config")->required()->check(CLI::ExistingFile);
  batch_cmd->add_option("--index", batch_args.index, "Micro-batch number (step * accumulation + micro)")
      ->check(CLI::NonNegativeNumber);
  batch_cmd->add_option("-o,--output", batch_args.output, "Output .safetensors")->required();
  batch_cmd->add_option("--data", batch_args.data, "Text file or folder (default: [train] data)");
  batch_cmd->add_option("--vocab", batch_args.vocab, "vocab.txt (default: [train] vocab)");

  std::string check_config;
  CheckOptions check_options;
  CLI::App* check_cmd = app.add_subcommand(
      "check", "Run one training step and optimizer step of the compiled program on a device and compare every "
               "kernel's results with the reference executor's (on synthetic batches)");
  check_cmd->add_option("config", check_config, "TOML config")->required()->check(CLI::ExistingFile);
  check_cmd->add_option("--device", check_options.device, "host (the emulation) or cuda")
      ->check(CLI::IsMember({"host", "cuda"}));
  check_cmd->add_option("--tolerance", check_options.tolerance,
                        "Largest error allowed, relative to a value's largest magnitude (default 1e-3 at fp32, "
                        "5e-2 at 16-bit precisions)")
      ->check(CLI::PositiveNumber);
  check_cmd->add_flag("--all", check_options.all, "Print every value's error, not only those beyond tolerance");
  CompileFlags check_flags;
  check_flags.add_to(check_cmd);

  bool info_json_flag = false;
  std::string info_file;
  CLI::App* info_cmd = app.add_subcommand("info", "Show the CUDA driver, GPUs and NVRTC libraries found, or what a "
                                                   ".bertx file holds");
  info_cmd->add_option("file", info_file, "A compiled program (.bertx) to describe")->check(CLI::ExistingFile);
  info_cmd->add_flag("--json", info_json_flag, "Write JSON");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (*compile_cmd) return compile(compile_args, compile_flags, model);
    if (*train_cmd) return train(train_args, train_flags, model);
    if (*eval_cmd) return eval(eval_args, model);
    if (*batch_cmd) return batch(batch_args, model);
    if (*check_cmd) {
      frontend::Config config = frontend::load_config(check_config, model.extra_keys);
      config.compile = check_flags.apply(config.compile);
      return run_check(model, config, check_options, std::cout);
    }
    return info(info_json_flag, info_file, model);
  } catch (const std::exception& e) {
    std::cerr << fmt::format("{}: error: {}\n", program, e.what());
    return 1;
  }
}

}  // namespace bertc::tools
