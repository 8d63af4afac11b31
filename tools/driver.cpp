// Command line of bertc and of model programs: parse arguments (CLI11), run a subcommand.
#include "tools/driver.h"

#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "ir/printer.h"
#include "tools/output_file.h"
#include "tools/report.h"

namespace bertc::tools {
namespace {

struct CompileArgs {
  std::string config;
  std::string emit = "ir";
  std::string output;
  bool json = false;
};

int compile(const CompileArgs& args, const frontend::ModelDefinition& model) {
  const frontend::Config config = frontend::load_config(args.config, model.extra_keys);
  const ir::Graph graph = frontend::build_model(model, config);
  std::string text;
  if (args.emit == "ir") {
    text = ir::print(graph);
  } else if (args.emit == "stats") {
    auto stats = stats_json(config, model.name, graph);
    text = args.json ? stats.dump(2) + "\n" : stats_text(stats);
  } else {  // params
    auto params = params_json(graph);
    text = args.json ? params.dump(2) + "\n" : params_text(params);
  }
  write_output(args.output, text);
  return 0;
}

int info(bool json, const frontend::ModelDefinition& model) {
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
  compile_cmd->add_option("--emit", compile_args.emit, "What to write: ir (re-readable by bertc-opt), stats, params")
      ->check(CLI::IsMember({"ir", "stats", "params"}));
  compile_cmd->add_flag("--json", compile_args.json, "Write stats or params as JSON");
  compile_cmd->add_option("-o,--output", compile_args.output, "Output file (written atomically); default stdout");

  bool info_json_flag = false;
  CLI::App* info_cmd = app.add_subcommand("info", "Show the CUDA driver, GPUs and NVRTC libraries found");
  info_cmd->add_flag("--json", info_json_flag, "Write JSON");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (*compile_cmd) return compile(compile_args, model);
    return info(info_json_flag, model);
  } catch (const std::exception& e) {
    std::cerr << fmt::format("{}: error: {}\n", program, e.what());
    return 1;
  }
}

}  // namespace bertc::tools
