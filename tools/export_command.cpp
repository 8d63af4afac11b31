// bertc export (see export_command.h).
#include "tools/export_command.h"

#include <filesystem>
#include <stdexcept>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "run_config/config.h"
#include "train/checkpoint.h"
#include "train/hf_export.h"
#include "tools/output_file.h"
#include "train/stop_request.h"

namespace bertc::tools {

CLI::App* add_export_command(CLI::App& app, ExportArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "export", "Write a checkpoint as a Hugging Face model folder (config.json, model.safetensors, vocab.txt, "
                "tokenizer config) that transformers' from_pretrained loads; no optimizer state");
  cmd->add_option("checkpoint", args.checkpoint, "A checkpoint of bertc train or bertc finetune")
      ->required()
      ->check(CLI::ExistingPath);  // (a run folder is said as one: export_checkpoint)
  cmd->add_option("-o,--output", args.output, "The folder to write (new, or empty)")->required();
  cmd->add_option("--for", args.head,
                  "The architecture: the checkpoint's own by default (BertForPreTraining, or the fine-tuned "
                  "BertFor...Classification), or base (BertModel: the encoder and pooler)")
      ->check(CLI::IsMember(ir::enum_choices<run_config::HfHead>()));
  cmd->add_option("--vocab", args.vocab,
                  "The vocabulary (default: the file the checkpoint was trained with, if unchanged)")
      ->check(CLI::ExistingFile);
  return cmd;
}

int export_checkpoint(const ExportArgs& args, std::ostream& log) {
  train::ExportOptions o;
  train::refuse_run_folder_as_weights(args.checkpoint, "export");
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
  const train::StopOnSignal stop_on_signal(
      "stopping the export: removing the folder it was making; signal again to end at once",
      "ended at once by a second signal: nothing is written under the folder's name (its part-made copy beside it, "
      ".NAME.tmp.PID, is removed by the next export to it); run the same command again");
  o.stop_requested = train::stop_requested;
  try {
    train::export_hf_folder(o, log);
  } catch (const train::ExportStopped& stopped) {
    log << fmt::format("export: stopped by {}: nothing written to {}; run the same command again\n",
                       train::signal_name(stopped.signal()), o.output.string());
    return 128 + stopped.signal();
  }
  return 0;
}

}  // namespace bertc::tools
