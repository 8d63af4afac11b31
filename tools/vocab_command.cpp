// `bertc vocab`: its options, and driver::train_vocab.
#include "tools/subcommand.h"

#include <iostream>

#include "driver/train_vocab.h"
#include "tools/cli_bounds.h"

namespace bertc::tools {
namespace {

class VocabCommand final : public Subcommand {
 public:
  using Subcommand::Subcommand;
  driver::Workload workload() const override { return driver::Workload::Vocab; }
  int run() override { return driver::train_vocab(args_, context_.model, std::cerr); }

 private:
  CLI::App* add_to(CLI::App& app) override {
    CLI::App* c = app.add_subcommand("vocab",
                                     "Train a WordPiece vocabulary (vocab.txt) of a given size from the config's "
                                     "text, with its do_lower_case");
    c->add_option("config", args_.config, "TOML config")->required()->check(CLI::ExistingFile);
    c->add_option("-o,--output", args_.output, "vocab.txt to write (a new file)")->required();
    c->add_option("--input", args_.input, "Text file or folder of .txt and .txt.gz files (default: [train] data)");
    c->add_option("--size", args_.size,
                  "Tokens in the vocabulary, special tokens included (default: the config's [model] vocab_size, "
                  "30522 where it sets none)")
        ->check(kCount);
    c->add_option("--min-frequency", args_.min_frequency, "Pairs seen fewer times are not merged")
        ->check(kCount)
        ->capture_default_str();
    c->add_option("--limit-alphabet", args_.limit_alphabet, "Characters kept (the most frequent)")
        ->check(kCount)
        ->capture_default_str();
    c->add_option("--threads", args_.threads, "Threads counting words (0: every core)")
        ->check(kCountOrNone)
        ->capture_default_str();
    return c;
  }

  driver::VocabArgs args_;
};

}  // namespace

std::unique_ptr<Subcommand> vocab_command(const CommandContext& context) {
  return std::make_unique<VocabCommand>(context);
}

}  // namespace bertc::tools
