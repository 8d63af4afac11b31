// Compiled programs as inputs: the one a file holds (a .bertx or a training executable), the
// config it was compiled from, and what a training executable's --help says of it.
#pragma once

#include <optional>
#include <string>

#include "codegen/program.h"
#include "driver/compile_flags.h"
#include "frontend/model.h"
#include "run_config/config.h"

namespace bertc::driver {

// The config a compiled program was compiled from, with its options; `source` (the .bertx, or the
// training executable carrying the program) names it in messages, and its folder is where the
// config's relative paths start. Refuses another model program's, and compile flags that would
// change the program.
run_config::Config compiled_config(const codegen::CompiledProgram& p, const std::string& source, const CompileFlags& flags,
                                   const frontend::ModelDefinition& model);

// The compiled program a file holds: a .bertx (known by its magic, whatever its name), or a
// training executable's; nullopt for anything else (a config).
std::optional<codegen::CompiledProgram> compiled_program_in(const std::string& path);

// The --help text of a training executable `program`: what it holds and how to run it.
std::string executable_description(const std::string& program, const codegen::CompiledProgram& p);

}  // namespace bertc::driver
