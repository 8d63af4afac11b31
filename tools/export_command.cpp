// `bertc export`: its options, and driver::export_checkpoint.
#include "tools/subcommand.h"

#include <iostream>

#include "driver/export_checkpoint.h"
#include "ir/enum_names.h"
#include "run_config/hf_config.h"

namespace bertc::tools {
namespace {

class ExportCommand final : public Subcommand {
 public:
  using Subcommand::Subcommand;
  int run() override { return driver::export_checkpoint(args_, std::cerr); }

 private:
  CLI::App* add_to(CLI::App& app) override {
    CLI::App* c = app.add_subcommand(
        "export",
        "Write a checkpoint as a Hugging Face model folder (config.json, model.safetensors, vocab.txt, "
        "tokenizer config) that transformers' from_pretrained loads; no optimizer state");
    c->add_option("checkpoint", args_.checkpoint, "A checkpoint of bertc train or bertc finetune")
        ->required()
        ->check(CLI::ExistingPath);  // (a run folder is said as one: export_checkpoint)
    c->add_option("-o,--output", args_.output, "The folder to write (new, or empty)")->required();
    c->add_option("--for", args_.head,
                  "The architecture: the checkpoint's own by default (BertForPreTraining, or the fine-tuned "
                  "BertFor...Classification), or base (BertModel: the encoder and pooler)")
        ->check(CLI::IsMember(ir::enum_choices<run_config::HfHead>()));
    c->add_option("--vocab", args_.vocab,
                  "The vocabulary (default: the file the checkpoint was trained with, if unchanged)")
        ->check(CLI::ExistingFile);
    return c;
  }

  driver::ExportArgs args_;
};

}  // namespace

std::unique_ptr<Subcommand> export_command(const CommandContext& context) {
  return std::make_unique<ExportCommand>(context);
}

}  // namespace bertc::tools
