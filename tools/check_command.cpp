// `bertc check`: its options, and driver::check.
#include "tools/subcommand.h"

#include <iostream>

#include "driver/check.h"
#include "driver/device_choice.h"
#include "tools/cli_bounds.h"
#include "tools/compile_flag_options.h"

namespace bertc::tools {
namespace {

class CheckCommand final : public Subcommand {
 public:
  using Subcommand::Subcommand;
  driver::Workload workload() const override { return driver::Workload::Check; }
  int run() override { return driver::check(file_, flags_, args_, context_.model, std::cout); }
  driver::MemoryAdvice memory_advice() const override { return advice_running(file_, false); }

 private:
  CLI::App* add_to(CLI::App& app) override {
    CLI::App* c = app.add_subcommand(
        "check",
        "Run one training step and optimizer step of the compiled program on a device and compare every "
        "kernel's results with the reference executor's (on synthetic batches)");
    c->add_option("config", file_, "TOML config, or a compiled program (.bertx or training executable)")
        ->required()
        ->check(CLI::ExistingFile);
    c->add_option("--device", args_.device, "The device: " + driver::devices_help())
        ->check(CLI::IsMember(driver::device_names({})));
    c->add_option("--tolerance", args_.tolerance,
                  "Largest error allowed, relative to a value's largest magnitude (default 1e-3 at fp32, "
                  "5e-2 at 16-bit precisions)")
        ->check(kPositive);
    CLI::Option* check_all =
        c->add_flag("--all", args_.all, "Print every value's error, not only those beyond tolerance");
    c->add_option("--sample-blocks", args_.sample_blocks,
                  "With --device ptx: run at most N blocks of each launch (spread over its grid) and a repeated "
                  "kernel once, and print the counts scaled to the grids and the projected step time beside the "
                  "roofline, comparing no value (for models too large to emulate whole, e.g. bert-base)")
        ->check(CLI::Range(2, 1 << 20))
        ->excludes(check_all)
        ->excludes("--tolerance");
    c->add_option_function<std::string>(
         "--approx", [&](const std::string& name) { args_.approx = ir::enum_named<ptx::ApproxResults>(name); },
         "With --device ptx: the approximate instructions' results (ex2, lg2, rsqrt, tanh, sin, cos, "
         "rcp/sqrt/div .approx): worst (default: each at the edge of the PTX ISA's error bound, so that a pass "
         "holds for any GPU's) or rounded (correctly rounded)")
        ->check(CLI::IsMember(ir::enum_choices<ptx::ApproxResults>()));
    c->add_option("--schedule-seed", args_.schedule_seed,
                  "With --device ptx: the emulator's schedule: 0 runs blocks, warps and lanes in index order, "
                  "any other number a shuffled order of each, warps interleaved from sm_70 on (default 1); a "
                  "right kernel gives the same values under every seed")
        ->check(kCountOrNone);  // (-1 read as an unsigned number wrapped to 2^64 - 1)
    c->add_option("--resident-blocks", args_.resident_blocks,
                  "With --device ptx and a seed other than 0: how many blocks of a launch run side by side, "
                  "their warps' turns interleaved, as a GPU's multiprocessors run them (1 to 32; default 4)")
        ->check(at_least(1, 32, ", the most blocks a multiprocessor of any GPU bertc targets runs at once"));
    add_compile_flags(c, flags_);
    return c;
  }

  std::string file_;
  driver::CheckOptions args_;
  driver::CompileFlags flags_;
};

}  // namespace

std::unique_ptr<Subcommand> check_command(const CommandContext& context) {
  return std::make_unique<CheckCommand>(context);
}

}  // namespace bertc::tools
