// `bertc compile`: its options, and driver::compile.
#include "tools/subcommand.h"

#include "driver/compile.h"
#include "tools/cli_bounds.h"
#include "tools/compile_flag_options.h"

namespace bertc::tools {
namespace {

class CompileCommand final : public Subcommand {
 public:
  using Subcommand::Subcommand;
  int run() override { return driver::compile(args_, flags_, context_.model); }

 private:
  CLI::App* add_to(CLI::App& app) override {
    CLI::App* c = app.add_subcommand("compile", "Build the model's training graph from a TOML config");
    c->add_option("config", args_.config, "TOML config ([model] [train] [compile])")
        ->required()
        ->check(CLI::ExistingFile);
    c->add_option("--emit", args_.emit_text,
                  "What to write: ir (forward graph), step-ir (forward, backward, accumulation, compiled), "
                  "optimizer-ir, report (passes, kernels, FLOPs, memory, estimate), stats, params, cuda (every "
                  "kernel's source), plan (the program compiled for --arch: a .bertx file); every IR "
                  "re-reads with bertc-opt. -o FILE.bertx implies plan")
        ->check(CLI::IsMember(ir::enum_choices<driver::Emit>()))
        ->each([&](const std::string&) { args_.emit_given = true; });
    c->add_flag("--report", args_.report, "The same as --emit report");
    c->add_option("--profile", args_.profile,
                  "With the report: a per-kernel profile (bertc train --profile's JSON) of this program, each "
                  "launch's measured time next to its roofline estimate for --arch")
        ->check(CLI::ExistingFile);
    c->add_flag("--json", args_.json, "Write stats or params as JSON");
    c->add_option("-o,--output", args_.output, "Output file (written atomically); default stdout");
    c->add_option("--ranks", args_.ranks,
                  "With -o FILE.bertx or --executable: the data-parallel ranks the program trains on (its "
                  "optimizer step averages all their micro-batches; bertc train runs it on exactly that many)")
        ->check(kCount);
    c->add_flag("--executable", args_.executable,
                "Write -o as a self-contained training executable: this program with the compiled program "
                "inside (NAME train runs it with no compiler, NVRTC or toolkit; --help says what it holds)");
    c->add_option_function<std::string>(
         "--images",
         [&](const std::string& name) { args_.images = ir::enum_named<cuda::ImageKind>(name); },
                  "The kernel images of -o FILE.bertx or --executable: cubin (machine code for --arch: loads at "
                  "once, runs on GPUs of that arch only) or ptx (the driver compiles it as the program loads, for "
                  "a GPU of --arch or newer; bertc's emulated CUDA driver runs only PTX) [default: cubin]")
        ->check(CLI::IsMember(ir::enum_choices<cuda::ImageKind>()));
    add_compile_flags(c, flags_);
    return c;
  }

  driver::CompileArgs args_;
  driver::CompileFlags flags_;
};

}  // namespace

std::unique_ptr<Subcommand> compile_command(const CommandContext& context) {
  return std::make_unique<CompileCommand>(context);
}

}  // namespace bertc::tools
