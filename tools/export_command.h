// bertc export: a checkpoint as a Hugging Face model folder (train/hf_export.h).
#pragma once

#include <ostream>
#include <string>

namespace CLI {
class App;
}

namespace bertc::tools {

struct ExportArgs {
  std::string checkpoint, output, head, vocab;
};

CLI::App* add_export_command(CLI::App& app, ExportArgs& args);
int export_checkpoint(const ExportArgs& args, std::ostream& log);

}  // namespace bertc::tools
