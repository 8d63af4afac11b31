// Paths, weights and launches the commands that run a model check (see run_inputs.h).
#include "driver/run_inputs.h"

#include <stdexcept>

#include <fmt/format.h>

#include "distributed/communicator.h"
#include "run_config/hf_config.h"
#include "run_folder/checkpoint.h"
#include "support/ascii_lower.h"

namespace bertc::driver {

std::filesystem::path chosen_path(const std::string& flag, const run_config::Config& c, const std::string& from_config) {
  return flag.empty() ? c.resolve(from_config) : std::filesystem::path(flag);
}

run_config::Config load_config_for(const std::string& path, const std::string& init, const frontend::ModelDefinition& model) {
  run_config::Config config = run_config::load_config(path, model.extra_keys, /*model_required=*/false);
  run_folder::refuse_run_folder_as_weights(init, "--init");
  run_config::take_model_from(config, init, model.name);
  return config;
}

std::string data_read_at(const std::filesystem::path& data, const std::filesystem::path& output) {
  std::error_code ec;
  if (!std::filesystem::is_directory(data, ec)) return data.string();
  const std::string name = support::ascii_lower(output.filename().string());
  // (as the folder's reader takes them: whatever their case)
  const bool read = name.ends_with(".txt") || name.ends_with(".txt.gz") || name.ends_with(".hdf5") || name.ends_with(".h5");
  return read ? data.string() : std::string();
}

void refuse_several_ranks(const std::string& command) {
  const distributed::Launch launch = distributed::detect_launch();
  if (launch.size <= 1) return;
  const std::string& name = command;
  // Variables left set in a shell (no launcher at all) are unset; a launcher's ranks run without it.
  const std::string fix = launch.launcher == "RANK/WORLD_SIZE"
                              ? fmt::format("WORLD_SIZE={} is set in the environment: run it with WORLD_SIZE and RANK "
                                            "unset (env -u WORLD_SIZE -u RANK bertc {} ...)",
                                            launch.size, name)
                              : "run it without the launcher";
  throw std::invalid_argument(fmt::format(
      "bertc {} runs as one process, and this is rank {} of {} ({}): {} (only bertc train and bertc finetune train "
      "on several ranks)",
      name, launch.rank, launch.size, launch.launcher, fix));
}

}  // namespace bertc::driver
