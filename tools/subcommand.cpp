// The subcommands' shared part (see subcommand.h).
#include "tools/subcommand.h"

#include <filesystem>

#include "codegen/bertx_file.h"

namespace bertc::tools {

driver::MemoryAdvice Subcommand::memory_advice() const {
  return driver::memory_advice(workload(), "", /*compiled=*/false, context_.model);
}

driver::MemoryAdvice Subcommand::advice_running(const std::string& file, bool embedded_runs) const {
  std::error_code ec;
  const bool compiled =
      embedded_runs || (!file.empty() && std::filesystem::is_regular_file(file, ec) && codegen::is_bertx(file));
  return driver::memory_advice(workload(), file, compiled, context_.model);
}

}  // namespace bertc::tools
