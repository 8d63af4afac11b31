// `bertc info`: its options, and driver::info (also run on a launcher's ranks: it shows the launch).
#include "tools/subcommand.h"

#include "driver/info.h"

namespace bertc::tools {
namespace {

class InfoCommand final : public Subcommand {
 public:
  using Subcommand::Subcommand;
  int run() override { return driver::info(json_, file_, context_.model); }
  bool runs_on_ranks() const override { return true; }

 private:
  CLI::App* add_to(CLI::App& app) override {
    CLI::App* c = app.add_subcommand("info",
                                     "Show the CUDA driver, GPUs and NVRTC libraries found, or what a "
                                     "file or folder holds");
    c->add_option("file", file_,
                  "What to describe: a compiled program (.bertx, a training executable), a checkpoint, a run "
                  "folder, a Hugging Face model folder, or weights")
        ->check(CLI::ExistingPath);
    c->add_flag("--json", json_, "Write JSON");
    return c;
  }

  std::string file_;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Subcommand> info_command(const CommandContext& context) {
  return std::make_unique<InfoCommand>(context);
}

}  // namespace bertc::tools
