// bertc eval (see eval.h).
#include "driver/eval.h"

#include <filesystem>
#include <iostream>
#include <map>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "codegen/bertx_file.h"
#include "driver/output_file.h"
#include "driver/run_inputs.h"
#include "driver/training_executable.h"
#include "run_folder/stop_request.h"
#include "support/resolved_path.h"
#include "support/safetensors.h"
#include "train/evaluate.h"

namespace bertc::driver {

int eval(const EvalArgs& args, const frontend::ModelDefinition& model) {
  // Seconds of the CPU reference and a write done whole or not at all: a signal ends it at once,
  // the file being written removed.
  const run_folder::StopOnSignal ends_at_once(nullptr, "eval ended by a signal: no dump was written (one being written is "
                                                  "removed); run the same command again");
  if (codegen::is_bertx(args.config) || embedded_program(args.config))
    throw std::invalid_argument(fmt::format("{}: a compiled training program (dropout on); eval runs the model without "
                                            "dropout on the CPU reference, built from a config: bertc eval CONFIG "
                                            "(bertc info shows the config a compiled program holds)",
                                            args.config));
  // (Two outputs of one name: the second written would replace the first.)
  if (std::error_code ec; !args.dump_logits.empty() && !args.dump_grads.empty() &&
                          (support::resolved_path(args.dump_logits) ==
                               support::resolved_path(args.dump_grads) ||
                           std::filesystem::equivalent(args.dump_logits, args.dump_grads, ec)))
    throw std::invalid_argument(fmt::format("--dump-logits {} and --dump-grads {} name the same file, and each writes "
                                            "one of its own (the second would replace the first): give two names",
                                            args.dump_logits, args.dump_grads));
  for (const auto& [output, option, format] : {std::tuple{args.dump_grads, "--dump-grads", "bertc-gradients"},
                                               std::tuple{args.dump_logits, "--dump-logits", "bertc-logits"}}) {
    refuse_console(output, option, "a safetensors file");
    refuse_output_onto_input(output, option, {{args.init, "--init"}, {args.batch, "--batch"}, {args.config, "the config"}});
    refuse_replacing_another_kind(output, option, format);
  }
  const run_config::Config config = load_config_for(args.config, args.init, model);
  const train::EvalResult r = train::evaluate_batch(model, config, args.init, args.batch);
  for (const std::string& note : r.notes) std::cerr << note << "\n";
  std::cerr << (r.vocab ? fmt::format("vocab: {} (the batch's; checked against the weights' where they record one)\n", r.vocab->describe())
                        : "vocab: the batch records none (an older bertc batch): nothing shows it is the weights'\n");
  for (const auto& [name, value] : r.losses) std::cout << fmt::format("{} {:.9g}\n", name, value);
  // --dump-logits and --dump-grads: named tensors as a safetensors file of a format.
  auto dump = [](const std::string& path, const std::map<std::string, support::HostTensor>& tensors,
                 const std::string& what) {
    if (path.empty()) return;
    support::Safetensors file;
    for (const auto& [name, t] : tensors) file.tensors[name] = support::to_stored(t);
    file.metadata["format"] = "bertc-" + what;
    support::write_safetensors(path, file);
    std::cerr << fmt::format("{} ({} tensors) written to {}\n", what, tensors.size(), path);
  };
  dump(args.dump_logits, r.logits, "logits");
  dump(args.dump_grads, r.gradients, "gradients");
  return 0;
}

}  // namespace bertc::driver
