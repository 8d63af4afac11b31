// bertc export (see export_command.h).
#include "tools/export_command.h"

#include <CLI/CLI.hpp>

#include "train/hf_export.h"

namespace bertc::tools {

CLI::App* add_export_command(CLI::App& app, ExportArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "export", "Write a checkpoint as a Hugging Face model folder (config.json, model.safetensors, vocab.txt, "
                "tokenizer config) that transformers' from_pretrained loads; no optimizer state");
  cmd->add_option("checkpoint", args.checkpoint, "A checkpoint of bertc train or bertc finetune")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", args.output, "The folder to write (new, or empty)")->required();
  cmd->add_option("--for", args.head,
                  "The architecture: the checkpoint's own by default (BertForPreTraining, or the fine-tuned "
                  "BertFor...Classification), or base (BertModel: the encoder and pooler)")
      ->check(CLI::IsMember(ir::enum_choices<frontend::HfHead>()));
  cmd->add_option("--vocab", args.vocab,
                  "The vocabulary (default: the file the checkpoint was trained with, if unchanged)")
      ->check(CLI::ExistingFile);
  return cmd;
}

int export_checkpoint(const ExportArgs& args, std::ostream& log) {
  train::ExportOptions o;
  o.checkpoint = args.checkpoint;
  o.output = args.output;
  if (!args.head.empty()) o.head = ir::enum_named<frontend::HfHead>(args.head);
  if (!args.vocab.empty()) o.vocab = args.vocab;
  train::export_hf_folder(o, log);
  return 0;
}

}  // namespace bertc::tools
