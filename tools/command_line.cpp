// bertc's command line (and every model program's): CLI11 parses the arguments into the
// subcommand they name (tools/*_command.cpp), which calls the driver; errors are said here, each
// with its fix.
#include "tools/command_line.h"

#include <sys/resource.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "codegen/bertx_file.h"
#include "driver/compiled_program.h"
#include "driver/process_setup.h"
#include "driver/run_inputs.h"
#include "driver/training_executable.h"
#include "driver/version.h"
#include "ir/out_of_memory.h"
#include "support/checked_stdout.h"
#include "support/file_errors.h"
#include "tools/subcommand.h"

namespace bertc::tools {
namespace {

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

// The running executable's path (what messages name for its embedded program).
std::string self_path(const char* argv0) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(argv0) : self.string();
}

// What is refused before CLI11 parses: "--vocab=" (CLI11's "1 required TEXT missing", said as the
// empty value it is) and a working directory removed under the shell (every relative path fails,
// said as that); "" when neither.
std::string refused_before_parsing(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (const std::string_view arg = argv[i]; arg.starts_with("--") && arg.ends_with("=") && arg.size() > 3) {
      const std::string name(arg.substr(0, arg.size() - 1));
      return fmt::format("{}= (an empty value: an unset variable in a script?): give {} a value, or leave it out for "
                         "its default",
                         name, name);
    }
  if (std::error_code ec; std::filesystem::current_path(ec).empty() && ec)
    return "the working directory no longer exists (removed while the shell was in it): cd to an existing folder";
  return "";
}

// Runs the parsed subcommand `name`; an error is said on stderr after `program`'s name, with its
// fix (less memory by the command's own advice, a write's by errno), and gives exit code 1.
int run_saying_errors(Subcommand& chosen, const std::string& name, const std::string& program) {
  try {
    if (!chosen.runs_on_ranks()) driver::refuse_several_ranks(name);
    return chosen.run();
  } catch (const ir::OutOfMemory& e) {
    std::cerr << fmt::format("{}: error: {}: {}\n", program, e.what(), chosen.memory_advice().text);
  } catch (const std::bad_alloc&) {
    // (under an address-space limit, the limit is what ran out first: said, with its fix)
    rlimit as{};
    const bool limited = ::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY;
    const driver::MemoryAdvice advice = chosen.memory_advice();
    const std::string limit = "raise or remove the limit (ulimit -v unlimited)";
    std::cerr << fmt::format("{}: error: out of host memory{}: {}\n", program,
                             limited ? fmt::format(" under the address-space limit (ulimit -v {} KiB)", as.rlim_cur / 1024)
                                     : "",
                             !limited                 ? advice.text
                             : advice.model_too_large ? advice.text + ", or " + limit
                                                      : limit + ", or " + advice.text);
  } catch (const support::FileError& e) {  // (a write: its fix by errno)
    const std::string fix = support::file_error_fix(e.code().value(), e.path(), e.needed());
    std::cerr << fmt::format("{}: error: {}{}\n", program, e.what(), fix.empty() ? "" : ": " + fix);
  } catch (const std::filesystem::filesystem_error& e) {  // (a folder made, a file moved: said without C++'s words)
    std::cerr << fmt::format("{}: error: {}\n", program, support::describe_file_error(e));
  } catch (const std::exception& e) {
    std::cerr << fmt::format("{}: error: {}\n", program, e.what());
  }
  return 1;
}

}  // namespace

int run_command_line(int argc, char** argv, const frontend::ModelDefinition& model) {
  driver::set_up_process(argv);  // (first: it may execute the program again, and starts no thread)
  support::CheckedStdout checked_stdout;
  const std::string program = std::filesystem::path(argv[0]).filename().string();
  const std::string self = self_path(argv[0]);
  CommandContext context{model, std::nullopt, self};
  try {
    if (std::optional<std::string> bytes = driver::embedded_program())
      context.embedded = codegen::decode_bertx(*bytes, self, /*in_executable=*/true);
  } catch (const std::exception& e) {
    std::cerr << fmt::format("{}: error: {}\n", program, e.what());
    return 1;
  }
  CLI::App app(context.embedded
                   ? driver::executable_description(program, *context.embedded)
                   : fmt::format("{}: {} (bertc, a JIT training compiler for BERT)", program, model.description),
               program);
  app.set_version_flag("--version", std::string("bertc ") + driver::bertc_version());
  app.require_subcommand(1);

  // One pattern for every subcommand (tools/subcommand.h), declared in the order --help lists them.
  struct Declared {
    std::unique_ptr<Subcommand> command;
    CLI::App* app;
  };
  std::vector<Declared> commands;
  for (const auto make : {compile_command, train_command, eval_command, batch_command, check_command, estimate_command,
                          prepare_data_command, export_command, finetune_command, vocab_command, info_command}) {
    std::unique_ptr<Subcommand> command = make(context);
    CLI::App* declared = command->declare(app);
    commands.push_back({std::move(command), declared});
  }

  if (const std::string refused = refused_before_parsing(argc, argv); !refused.empty()) {
    std::cerr << fmt::format("{}: error: {}\n", program, refused);
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
  // (require_subcommand(1): exactly one was parsed)
  const Declared& parsed = *std::ranges::find_if(commands, [](const Declared& d) { return d.app->parsed(); });
  Subcommand& chosen = *parsed.command;
  const int status = run_saying_errors(chosen, parsed.app->get_name(), program);
  // (output to a full disk or a closed pipe fails the command, whatever it printed)
  if (const std::string lost = checked_stdout.finish(); !lost.empty()) {
    std::cerr << fmt::format("{}: error: {}\n", program, lost);
    return 1;
  }
  return status;
}

}  // namespace bertc::tools
