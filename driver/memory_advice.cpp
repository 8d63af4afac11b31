// Out-of-memory advice by command, with the model's own size checked first.
#include "driver/memory_advice.h"

#include <exception>

#include "passes/pipeline.h"
#include "runtime/host_device.h"
#include "driver/compile_flags.h"
#include "train/micro_batch.h"
#include "run_config/config.h"

namespace bertc::driver {

std::string less_memory(Workload work, bool compiled) {
  if (compiled)
    return "its micro-batch and recompute are compiled in: compile it again with a lower [train] batch_size (raise "
           "gradient_accumulation_steps to keep the global batch) or --recompute selective|full (bertc compile "
           "CONFIG --arch sm_XX -o FILE.bertx), or train from the config with --batch-size auto";
  switch (work) {
    case Workload::Train:
      return "lower [train] batch_size (--batch-size; raise gradient_accumulation_steps to keep the global batch), "
           "recompute activations (--recompute selective or full), or let bertc choose the largest batch that fits "
           "(--batch-size auto); for text data, make shards (bertc prepare-data) or more text shards ([train] "
           "text_shards)";
    case Workload::Finetune:
    case Workload::Check:
      return "lower [train] batch_size in the config, or recompute activations (--recompute selective or full)";
    case Workload::Eval:
      return "evaluate a smaller batch (bertc batch from a config with a lower [train] batch_size)";
    case Workload::Batch:
      return "make shards (bertc prepare-data) or more text shards ([train] text_shards)";
    case Workload::PrepareData:
      return "lower --memory-mb (the bound the passes plan for) or --threads";
    case Workload::Vocab:
      return "count fewer words at once (--threads 1), or a part of the text (--input)";
    case Workload::Other:
      break;
  }
  return "the model is too large for this machine's memory: check the config's [model] sizes";
}

MemoryAdvice memory_advice(Workload work, const std::string& config, bool compiled,
                           const frontend::ModelDefinition& model) {
  const bool builds_the_model = work == Workload::Train || work == Workload::Finetune || work == Workload::Check;
  if (!compiled && !config.empty() && builds_the_model) {
    try {
      run_config::Config c = run_config::load_config(config, model.extra_keys);
      c.compile = resolve_here(c.compile);
      // (a second compile for the figure alone: it must not replace the run's --dump-ir)
      c.compile.dump_ir.clear();
      c.compile.print_ir_after_all = false;
      const passes::TrainingProgram program = passes::compile_training(frontend::build_model(model, c.model_settings()), c.compile, c.train);
      if (std::string too_large = train::weights_do_not_fit(program, runtime::host_available_bytes(), "free here");
          !too_large.empty())
        return {too_large, true};
    } catch (const std::exception&) {
      // (the config was read once already; failing again here leaves the usual advice)
    }
  }
  return {less_memory(work, compiled), false};
}

}  // namespace bertc::driver
