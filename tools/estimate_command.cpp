// `bertc estimate`: its options, and driver::estimate.
#include "tools/subcommand.h"

#include <iostream>

#include <fmt/format.h>

#include "distributed/compression.h"
#include "driver/estimate.h"
#include "passes/scaling_estimate.h"
#include "tools/cli_bounds.h"
#include "tools/compile_flag_options.h"

namespace bertc::tools {
namespace {

class EstimateCommand final : public Subcommand {
 public:
  using Subcommand::Subcommand;
  int run() override {
    args_.within_given = command_->count("--within") > 0;
    args_.between_given = command_->count("--between") > 0;
    return driver::estimate(args_, flags_, context_.model, std::cout);
  }

 private:
  CLI::App* add_to(CLI::App& app) override {
    CLI::App* c =
        app.add_subcommand("estimate",
                           "Estimate data-parallel training on several GPUs and machines: step time, days and cost per "
                           "gradient compression");
    c->add_option("config", args_.config, "TOML config")->required()->check(CLI::ExistingFile);
    c->add_option("--gpu", args_.gpus, "GPUs of the table (p40, v100, a100, h100, ...); repeatable")
        ->capture_default_str();
    c->add_option("--gpus-per-machine", args_.gpus_per_machine, "GPUs in each machine")
        ->check(kCount)
        ->capture_default_str();
    c->add_option("--machines", args_.machines, "Machines")->check(kCount)->capture_default_str();
    // (each flag's own links: a network given --within is refused by name in estimate, with both lists)
    c->add_option("--within", args_.within,
                  fmt::format("The link between a machine's GPUs ({})",
                              fmt::join(passes::interconnect_names(passes::LinkReach::WithinMachine), ", ")))
        ->capture_default_str();
    c->add_option("--between", args_.between,
                  fmt::format("The link between machines ({})",
                              fmt::join(passes::interconnect_names(passes::LinkReach::BetweenMachines), ", ")))
        ->capture_default_str();
    c->add_option("--latency-us", args_.latency_us,
                  "A hop's latency between machines, microseconds (a message sent and taken; default: the "
                  "--between link's own: 50 for 1gbe, 30 for 10gbe)")
        ->check(kNonNegative);
    c->add_option("--compression", args_.compressions,
                  "Gradient compressions to compare (default: none, fp16, powersgd at [train] powersgd_rank)")
        ->check(CLI::IsMember(ir::enum_choices<distributed::Compression>()));
    c->add_option("--steps", args_.steps, "Optimizer steps to train (default: [train] steps)")->check(kCount);
    c->add_option("--price", args_.price, "Dollars per GPU-hour (default: a cloud offer's for the GPUs that have one)")
        ->check(kNonNegative);
    c->add_flag("--json", args_.json, "Write JSON");
    add_compile_flags(c, flags_);
    return c;
  }

  driver::EstimateArgs args_;
  driver::CompileFlags flags_;
};

}  // namespace

std::unique_ptr<Subcommand> estimate_command(const CommandContext& context) {
  return std::make_unique<EstimateCommand>(context);
}

}  // namespace bertc::tools
