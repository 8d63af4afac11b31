// bertc export: a checkpoint as a Hugging Face model folder (run_folder/hf_export.h).
#pragma once

#include <ostream>
#include <string>

namespace bertc::driver {

struct ExportArgs {
  std::string checkpoint, output, head, vocab;
};

int export_checkpoint(const ExportArgs& args, std::ostream& log);

}  // namespace bertc::driver
