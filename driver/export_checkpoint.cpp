// bertc export (see export_command.h).
#include "driver/export_checkpoint.h"

#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "run_config/config.h"
#include "run_folder/checkpoint.h"
#include "run_folder/hf_export.h"
#include "driver/output_file.h"
#include "run_folder/stop_request.h"

namespace bertc::driver {

int export_checkpoint(const ExportArgs& args, std::ostream& log) {
  run_folder::ExportOptions o;
  run_folder::refuse_run_folder_as_weights(args.checkpoint, "export");
  o.checkpoint = args.checkpoint;
  // (The folder is made beside its place and renamed there: a link in the name's place is
  // followed, and the folder made where it leads, as every output is.)
  const std::string output =
      through_output_link(std::filesystem::path(args.output).lexically_normal().string());
  refuse_console(output, "-o", "an exported folder");
  refuse_dangling_link(output, "-o");
  refuse_checkpoint_name(output, "-o", "an exported folder");
  o.output = output;
  if (!args.head.empty()) o.head = ir::enum_named<run_config::HfHead>(args.head);
  if (!args.vocab.empty()) o.vocab = args.vocab;
  // A signal stops it between files; the folder it was making goes (it is renamed in whole).
  const run_folder::StopOnSignal stop_on_signal(
      "stopping the export: removing the folder it was making; signal again to end at once",
      "ended at once by a second signal: nothing is written under the folder's name (its part-made copy beside it, "
      ".NAME.tmp.PID, is removed by the next export to it); run the same command again");
  o.stop_requested = run_folder::stop_requested;
  try {
    run_folder::export_hf_folder(o, log);
  } catch (const run_folder::ExportStopped& stopped) {
    log << fmt::format("export: stopped by {}: nothing written to {}; run the same command again\n",
                       run_folder::signal_name(stopped.signal()), o.output.string());
    return 128 + stopped.signal();
  }
  return 0;
}

}  // namespace bertc::driver
