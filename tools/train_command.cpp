// `bertc train`: its options, and driver::train (the one command run on several ranks).
#include "tools/subcommand.h"

#include "driver/device_choice.h"
#include "driver/train_run.h"
#include "tools/cli_bounds.h"
#include "tools/compile_flag_options.h"

namespace bertc::tools {
namespace {

class TrainCommand final : public Subcommand {
 public:
  using Subcommand::Subcommand;
  driver::Workload workload() const override { return driver::Workload::Train; }
  int run() override { return driver::train(args_, flags_, context_.model, context_.embedded, context_.self); }
  driver::MemoryAdvice memory_advice() const override {
    return advice_running(args_.config, context_.embedded && args_.config.empty());
  }
  bool runs_on_ranks() const override { return true; }

 private:
  CLI::App* add_to(CLI::App& app) override {
    CLI::App* c = app.add_subcommand(
        "train", "Train the model: on the CPU reference executor, or the compiled program on a device (--device)");
    CLI::Option* train_config =
        c->add_option("config", args_.config,
                      context_.embedded
                          ? "Another TOML config or .bertx than the program this executable carries"
                          : "TOML config, or a program compiled by bertc compile -o FILE.bertx (run as compiled: no "
                            "NVRTC needed; its config's relative paths from the .bertx's folder)")
            ->check(CLI::ExistingFile);
    (void)train_config;  // (not required: train() says what is missing, and names a damaged executable)
    c->add_option("--steps", args_.steps, "Length of the run in optimizer steps (default: [train] steps)")
        ->check(kCount);
    c->add_option("--until", args_.until, "Stop (with a checkpoint) after this step; --resume continues")
        ->check(kCount);
    c->add_option("--data", args_.data,
                  "Text file, folder of .txt and .txt.gz files, or folder of bertc prepare-data shards (default: "
                  "[train] data)");
    c->add_option("--vocab", args_.vocab, "WordPiece vocab.txt (default: [train] vocab)");
    c->add_option("--device", args_.device,
                  "auto (a usable GPU, else the CPU), cpu (the reference executor, op by op), or a device "
                  "running the compiled program: " +
                      driver::devices_help())
        ->check(CLI::IsMember(driver::device_names({"auto", "cpu"})));
    c->add_option("--batch-size", args_.batch_size,
                  "Micro-batch size ([train] batch_size), or auto: the largest micro-batch that fits the device's "
                  "free memory, keeping batch_size x gradient_accumulation_steps")
        ->check(CLI::IsMember({"auto"}) | kCount);
    c->add_option("--device-memory", args_.device_memory,
                  "Bytes of device memory --batch-size auto plans for (default: the free memory of the device)")
        ->check(kCount);
    c->add_option("--checkpoint-dir", args_.checkpoint_dir, "Checkpoints and metrics (default: checkpoints/NAME)");
    c->add_option("--metrics", args_.metrics, "JSON-lines metrics file (default: CHECKPOINT_DIR/metrics.jsonl)");
    c->add_flag("--resume", args_.resume, "Continue from the newest checkpoint in the checkpoint folder");
    c->add_flag("--autotune", args_.autotune,
                "Time each matrix product as a generated kernel and as cuBLAS on the device, keep the faster "
                "(cached per GPU in the kernel cache's autotune.json)");
    c->add_flag("--eager", args_.eager,
                "Issue every kernel launch at every step instead of replaying the step recorded once as a "
                "device graph (CUDA Graph); for debugging: the results are the same");
    c->add_option("--init", args_.init,
                  "Start from these weights: a Hugging Face .safetensors or model folder (its config.json then "
                  "gives [model]), or a bertc checkpoint")
        ->check(CLI::ExistingPath);
    c->add_option("--profile", args_.profile,
                  "Time each kernel launch of this step on the device (one wait per launch) and print the "
                  "per-kernel table: time, TFLOP/s, GB/s and the ratio to the compile report's roofline estimate; "
                  "on a driver that keeps no time but counts (bertc's emulated one), the step's counted "
                  "instructions and the times projected from them instead (no --profile-out JSON)")
        ->check(kCount);
    c->add_option("--profile-out", args_.profile_out,
                  "Where --profile writes the table as JSON (default: CHECKPOINT_DIR/profile-stepSTEP.json; "
                  "bertc compile --report --profile reads it)");
    add_compile_flags(c, flags_);
    return c;
  }

  driver::TrainArgs args_;
  driver::CompileFlags flags_;
};

}  // namespace

std::unique_ptr<Subcommand> train_command(const CommandContext& context) {
  return std::make_unique<TrainCommand>(context);
}

}  // namespace bertc::tools
