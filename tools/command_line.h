// The command line of `bertc` and of every model program made with bertc_add_model(): the same
// subcommands (compile, train, finetune, ...); only the model definition differs.
#pragma once

#include "frontend/model.h"

namespace bertc::tools {

// Runs the command line for `model`; returns the process exit code. Errors go to stderr.
int run_command_line(int argc, char** argv, const frontend::ModelDefinition& model);

}  // namespace bertc::tools
