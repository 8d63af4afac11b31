// `bertc finetune`: its options, and driver::finetune.
#include "tools/subcommand.h"

#include <iostream>

#include "driver/device_choice.h"
#include "driver/finetune.h"
#include "tools/cli_bounds.h"
#include "tools/compile_flag_options.h"

namespace bertc::tools {
namespace {

class FinetuneCommand final : public Subcommand {
 public:
  using Subcommand::Subcommand;
  driver::Workload workload() const override { return driver::Workload::Finetune; }
  int run() override { return driver::finetune(args_, flags_, context_.model, std::cerr); }
  driver::MemoryAdvice memory_advice() const override { return advice_running(args_.config, false); }
  bool runs_on_ranks() const override { return true; }

 private:
  CLI::App* add_to(CLI::App& app) override {
    CLI::App* c =
        app.add_subcommand("finetune",
                           "Fine-tune on a task ([finetune] section: sequence or token classification, regression), "
                           "evaluating a dev file after each epoch and keeping the best checkpoint");
    c->add_option("config", args_.config, "TOML config with [model], [train] and [finetune]")
        ->required()
        ->check(CLI::ExistingFile);
    c->add_option("--init", args_.init,
                  "Start from these weights: a bertc checkpoint, a Hugging Face .safetensors, or a Hugging Face model "
                  "folder (config.json + model.safetensors or its shards: config.json then gives [model]); the task "
                  "head is made fresh (default: [finetune] init, else fresh weights)")
        ->check(CLI::ExistingPath);
    c->add_option("--train-data", args_.train_data,
                  "Training examples, .tsv or .jsonl (default: [finetune] train_data)");
    c->add_option("--dev-data", args_.dev_data, "Dev examples evaluated each epoch (default: [finetune] dev_data)");
    c->add_option("--epochs", args_.epochs, "Passes over the training examples (default: [finetune] epochs)")
        ->check(kCount);
    c->add_option("--device", args_.device,
                  "auto (a usable GPU, else the CPU), cpu (the reference executor), or a device running the "
                  "compiled program: " +
                      driver::devices_help())
        ->check(CLI::IsMember(driver::device_names({"auto", "cpu"})));
    c->add_option("--checkpoint-dir", args_.checkpoint_dir,
                  "Checkpoints (one per epoch, the best in best/) and metrics (default: checkpoints/NAME)");
    c->add_option("--metrics", args_.metrics, "JSON-lines metrics file (default: CHECKPOINT_DIR/metrics.jsonl)");
    c->add_flag("--eager", args_.eager, "On a device: issue each kernel launch instead of replaying a device graph");
    add_compile_flags(c, flags_);
    return c;
  }

  driver::FinetuneArgs args_;
  driver::CompileFlags flags_;
};

}  // namespace

std::unique_ptr<Subcommand> finetune_command(const CommandContext& context) {
  return std::make_unique<FinetuneCommand>(context);
}

}  // namespace bertc::tools
