// `bertc eval`: its options, and driver::eval.
#include "tools/subcommand.h"

#include "driver/eval.h"

namespace bertc::tools {
namespace {

class EvalCommand final : public Subcommand {
 public:
  using Subcommand::Subcommand;
  driver::Workload workload() const override { return driver::Workload::Eval; }
  int run() override { return driver::eval(args_, context_.model); }

 private:
  CLI::App* add_to(CLI::App& app) override {
    CLI::App* c = app.add_subcommand("eval", "Losses and gradients of one batch, dropout off");
    c->add_option("config", args_.config, "TOML config")->required()->check(CLI::ExistingFile);
    c->add_option("--init", args_.init,
                  "Weights: .safetensors with Hugging Face names (a bertc checkpoint), or a Hugging Face model "
                  "folder (its config.json then gives [model])")
        ->required()
        ->check(CLI::ExistingPath);
    c->add_option("--batch", args_.batch, "Batch (.safetensors: input_ids, token_type_ids, ...)")
        ->required()
        ->check(CLI::ExistingFile);
    c->add_option("--dump-grads", args_.dump_grads, "Write every param's gradient here (.safetensors)");
    c->add_option("--dump-logits", args_.dump_logits,
                  "Write the logits here (.safetensors: logits, or mlm_logits and nsp_logits)");
    return c;
  }

  driver::EvalArgs args_;
};

}  // namespace

std::unique_ptr<Subcommand> eval_command(const CommandContext& context) {
  return std::make_unique<EvalCommand>(context);
}

}  // namespace bertc::tools
