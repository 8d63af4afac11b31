// `bertc prepare-data`: its options, and driver::prepare_data.
#include "tools/subcommand.h"

#include <iostream>

#include "driver/prepare_data.h"
#include "tools/cli_bounds.h"

namespace bertc::tools {
namespace {

class PrepareDataCommand final : public Subcommand {
 public:
  using Subcommand::Subcommand;
  driver::Workload workload() const override { return driver::Workload::PrepareData; }
  int run() override { return driver::prepare_data(args_, context_.model, std::cerr); }

 private:
  CLI::App* add_to(CLI::App& app) override {
    CLI::App* c = app.add_subcommand(
        "prepare-data",
        "Turn training text into HDF5 shards in NVIDIA's BERT layout, with the config's tokenizer and "
        "example settings (seq_len, max_predictions_per_seq, dupe_factor, masked_lm_prob, seed)");
    c->add_option("config", args_.config, "TOML config")->required()->check(CLI::ExistingFile);
    c->add_option("-o,--output", args_.output, "Folder for the shards (new, or without shards in it)")->required();
    c->add_option("--input", args_.input, "Text file or folder of .txt and .txt.gz files (default: [train] data)");
    c->add_option("--vocab", args_.vocab, "vocab.txt (default: [train] vocab)");
    c->add_option("--shards", args_.shards, "Shards to write")->check(kCount)->capture_default_str();
    c->add_option("--memory-mb", args_.memory_mb, "Memory the preparation may take, in MiB")
        ->check(kPositive)
        ->capture_default_str();
    c->add_option("--threads", args_.threads, "Threads (0: every core)")->check(kCountOrNone)->capture_default_str();
    return c;
  }

  driver::PrepareDataArgs args_;
};

}  // namespace

std::unique_ptr<Subcommand> prepare_data_command(const CommandContext& context) {
  return std::make_unique<PrepareDataCommand>(context);
}

}  // namespace bertc::tools
