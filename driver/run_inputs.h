// What the commands that run a model read and write beside the config: paths given or the
// config's, the weights --init names, the outputs that must not land among the training data.
#pragma once

#include <filesystem>
#include <string>

#include "frontend/model.h"
#include "run_config/config.h"

namespace bertc::driver {

// A path given on the command line, else the config's (relative to the config file).
std::filesystem::path chosen_path(const std::string& flag, const run_config::Config& c, const std::string& from_config);

// A config for running from `init` (--init): a Hugging Face folder's config.json gives [model].
run_config::Config load_config_for(const std::string& path, const std::string& init, const frontend::ModelDefinition& model);

// The training data as an input an output (--metrics, --profile-out) must not be written onto: a
// file itself; of a folder (read by name: .txt, .txt.gz, HDF5 shards), an output of a name it
// reads, there now or not (a new one would be read as training text by the next run on the
// folder); "" where the output is no such name.
std::string data_read_at(const std::filesystem::path& data, const std::filesystem::path& output);

// Only bertc train runs on several ranks. Any other command that mpirun, srun or torchrun starts
// would run once per rank, each writing the same outputs (a fine-tuning run folder, shards, a
// vocabulary): refused on every rank, before anything is read or written. Throws
// std::invalid_argument naming the launcher and the fix.
void refuse_several_ranks(const std::string& command);

}  // namespace bertc::driver
