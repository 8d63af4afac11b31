// One subcommand of bertc's command line: its options, bound to its driver arguments (CLI11), and
// the driver call that runs it. Every subcommand is one file, tools/<name>_command.cpp, of this
// pattern; command_line.cpp lists them.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "codegen/program.h"
#include "driver/memory_advice.h"
#include "frontend/model.h"

namespace bertc::tools {

// What every subcommand is given: the model this program builds, and what it runs as.
struct CommandContext {
  const frontend::ModelDefinition& model;
  std::optional<codegen::CompiledProgram> embedded;  // the program a training executable carries
  std::string self;                                  // this executable's path, as messages name it
};

class Subcommand {
 public:
  explicit Subcommand(const CommandContext& context) : context_(context) {}
  virtual ~Subcommand() = default;
  Subcommand(const Subcommand&) = delete;
  Subcommand& operator=(const Subcommand&) = delete;

  // Declares the subcommand and its options on `app`, bound to this object's arguments.
  CLI::App* declare(CLI::App& app) { return command_ = add_to(app); }
  // Runs it after a successful parse: the exit code. Throws what the driver throws; the command
  // line says it.
  virtual int run() = 0;
  // What it runs, for what an out-of-memory error in it advises.
  virtual driver::Workload workload() const { return driver::Workload::Other; }
  // What an out-of-memory error in it advises.
  virtual driver::MemoryAdvice memory_advice() const;
  // Whether it may run as one of several data-parallel ranks (any other is refused on every rank).
  virtual bool runs_on_ranks() const { return false; }

 protected:
  virtual CLI::App* add_to(CLI::App& app) = 0;
  // memory_advice for a command that runs `file` (a config, or a compiled program), or, with
  // `embedded_runs`, this executable's own program.
  driver::MemoryAdvice advice_running(const std::string& file, bool embedded_runs) const;

  const CommandContext& context_;
  CLI::App* command_ = nullptr;
};

// The subcommands, each in its own file.
std::unique_ptr<Subcommand> compile_command(const CommandContext& context);
std::unique_ptr<Subcommand> train_command(const CommandContext& context);
std::unique_ptr<Subcommand> eval_command(const CommandContext& context);
std::unique_ptr<Subcommand> batch_command(const CommandContext& context);
std::unique_ptr<Subcommand> check_command(const CommandContext& context);
std::unique_ptr<Subcommand> estimate_command(const CommandContext& context);
std::unique_ptr<Subcommand> prepare_data_command(const CommandContext& context);
std::unique_ptr<Subcommand> export_command(const CommandContext& context);
std::unique_ptr<Subcommand> finetune_command(const CommandContext& context);
std::unique_ptr<Subcommand> vocab_command(const CommandContext& context);
std::unique_ptr<Subcommand> info_command(const CommandContext& context);

}  // namespace bertc::tools
