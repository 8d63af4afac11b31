// bertc-opt: read IR text, run a pipeline of registered passes with their options, print IR text.
// Every stage of bertc's own pipeline is one such run (bertc compile --dump-ir lists them).
// Errors: file:line:col: message.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/registry.h"
#include "support/checked_stdout.h"
#include "driver/output_file.h"

namespace {

using namespace bertc;

std::string read_input(const std::string& path) {
  std::ostringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
  } else {
    if (std::filesystem::is_directory(path)) throw std::runtime_error(fmt::format("{}: is a folder, not an IR file", path));
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(fmt::format("{}: cannot open file", path));
    text << in.rdbuf();
  }
  return text.str();
}

// Prints every diagnostic of a failed verification, located in `file`.
void report_verify(const std::string& file, const ir::VerifyError& e, const std::string& after) {
  for (const auto& d : e.diagnostics())
    std::cerr << ir::format_diagnostic(file, d.loc, after.empty() ? d.message : d.message + " (after pass " + after + ")")
              << "\n";
}

std::string pass_list_help() {
  std::string help =
      "The passes to run, in order, as MLIR writes a pipeline: comma-separated, each with its options in braces "
      "(key=value, space-separated), e.g. 'precision{mode=bf16},recompute{policy=auto budget=1400000000},fusion'. "
      "Passes in pipeline order:";
  for (const auto& p : passes::registered_passes())
    help += fmt::format("\n  {:<11} {}{}", p.name, p.summary, passes::pass_options_help(p));
  return help;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("bertc-opt: run bertc graph passes on IR text and print the result");
  std::string input = "-", output, pipeline;
  bool print_after_all = false, tables = false;
  app.add_option("input", input, "IR file, or - for stdin")->capture_default_str();
  app.add_option("--passes", pipeline, pass_list_help());
  app.add_option("-o,--output", output, "Output file (written atomically); default stdout");
  app.add_flag("--print-ir-after-all", print_after_all, "Print the IR to stderr after every pass");
  app.add_flag("--tables", tables,
                "Print the pass table and the [compile] option table as Markdown (as the docs show them) and exit")
      ->excludes("--passes", "--output", "--print-ir-after-all");
  CLI11_PARSE(app, argc, argv);

  support::CheckedStdout checked_stdout;
  if (tables) {
    std::cout << passes::markdown_tables();
    if (const std::string lost = checked_stdout.finish(); !lost.empty()) {
      std::cerr << "bertc-opt: error: " << lost << "\n";
      return 1;
    }
    return 0;
  }
  const std::string file = input == "-" ? "<stdin>" : input;
  std::vector<passes::PassInvocation> invocations;
  try {
    invocations = passes::parse_pipeline(pipeline);
  } catch (const ir::Error& e) {
    std::cerr << fmt::format("bertc-opt: error: {}\n(bertc-opt --help lists the passes and their options)\n", e.what());
    return 2;
  }
  std::string current_pass;
  try {
    ir::Graph graph = ir::parse(read_input(input));
    ir::verify_or_throw(graph);
    for (const passes::PassInvocation& inv : invocations) {
      current_pass = std::string(inv.pass->name);
      passes::PassContext context{inv.options, {}};
      inv.pass->run(graph, context);
      ir::verify_or_throw(graph);
      if (print_after_all) std::cerr << "// after " << current_pass << "\n" << ir::print(graph);
    }
    bertc::driver::write_output(output, ir::print(graph));
    // (IR to a full disk or a closed pipe: the command fails, not the next tool on a cut file)
    if (const std::string lost = checked_stdout.finish(); !lost.empty()) throw std::runtime_error(lost);
  } catch (const ir::VerifyError& e) {
    report_verify(file, e, current_pass);
    return 1;
  } catch (const ir::Error& e) {
    std::cerr << ir::format_diagnostic(file, e.loc(), current_pass.empty() ? e.what() : fmt::format("{} (in pass {})", e.what(), current_pass)) << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "bertc-opt: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
