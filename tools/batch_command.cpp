// `bertc batch`: its options, and driver::batch.
#include "tools/subcommand.h"

#include "driver/batch.h"
#include "tools/cli_bounds.h"

namespace bertc::tools {
namespace {

class BatchCommand final : public Subcommand {
 public:
  using Subcommand::Subcommand;
  driver::Workload workload() const override { return driver::Workload::Batch; }
  int run() override { return driver::batch(args_, context_.model); }

 private:
  CLI::App* add_to(CLI::App& app) override {
    CLI::App* c = app.add_subcommand(
        "batch",
        "Write one micro-batch of the training data, or of a [finetune] config's task examples (input of eval)");
    c->add_option("config", args_.config, "TOML config")->required()->check(CLI::ExistingFile);
    c->add_option("--index", args_.index, "Micro-batch number (step * accumulation + micro)")->check(kCountOrNone);
    c->add_option("-o,--output", args_.output, "Output .safetensors")->required();
    c->add_option("--data", args_.data,
                  "Text file, folder of .txt and .txt.gz files, or folder of bertc prepare-data shards (default: "
                  "[train] data); for a [finetune] config, task examples, .tsv or .jsonl (default: [finetune] "
                  "dev_data)");
    c->add_option("--vocab", args_.vocab, "vocab.txt (default: [train] vocab)");
    return c;
  }

  driver::BatchArgs args_;
};

}  // namespace

std::unique_ptr<Subcommand> batch_command(const CommandContext& context) {
  return std::make_unique<BatchCommand>(context);
}

}  // namespace bertc::tools
