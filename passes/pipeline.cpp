// Running the registry's passes in order, verifying, printing and dumping every stage.
#include "passes/pipeline.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>

#include <fmt/format.h>

#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/registry.h"

namespace bertc::passes {
namespace {

// The stages of an earlier dump into the same folder (NN-<stage>-<graph>.ir, stages.txt), which
// would otherwise mix with this one's (a pipeline with other options has other stages). Files of
// other names are the user's and stay.
void remove_earlier_dump(const std::filesystem::path& folder) {
  static const std::regex stage_file(R"(\d\d-[A-Za-z0-9_-]+\.ir)");
  // A stages.txt that is not a dump's list (its first line names the first stage's file) is the
  // user's: the folder is not a dump's, and nothing in it is removed or written over.
  if (std::ifstream list(folder / "stages.txt"); list) {
    std::string first;
    std::getline(list, first);
    // (empty: a dump whose compile was ended at once, before its list was written out)
    if (!first.empty() && !std::regex_search(first, std::regex(R"(^\d\d-[A-Za-z0-9_-]+\.ir: )")))
      throw std::runtime_error(fmt::format("--dump-ir {}: holds a stages.txt that is not a dump's (its first line: "
                                           "'{}'): give an empty or new folder, or an earlier dump's",
                                           folder.string(), first.substr(0, 60)));
  }
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && (name == "stages.txt" || std::regex_match(name, stage_file)))
      std::filesystem::remove(entry.path());
  }
}

// What every stage goes through: the verifier, --print-ir-after-all, --dump-ir (the IR as
// NN-<stage>-<graph>.ir and, in stages.txt, the bertc-opt command that makes it from the file
// before it), and the caller's callback.
class Stages {
 public:
  Stages(const CompileOptions& options, const AfterStage& after) : options_(options), after_(after) {
    if (!options.dump_ir.empty()) {
      const std::filesystem::path folder(options.dump_ir);
      std::error_code ec;
      if (std::filesystem::exists(folder, ec) && !std::filesystem::is_directory(folder, ec))
        throw std::runtime_error(fmt::format("--dump-ir {}: is {}, not a folder; give a folder for the stages",
                                             options.dump_ir,
                                             std::filesystem::is_regular_file(folder, ec) ? "a file" : "a device or a pipe"));
      std::filesystem::create_directories(folder, ec);
      if (ec) throw std::runtime_error(fmt::format("--dump-ir {}: cannot create the folder: {}", options.dump_ir, ec.message()));
      remove_earlier_dump(folder);
      manifest_.open(folder / "stages.txt");
      if (!manifest_) throw std::runtime_error(fmt::format("{}: cannot write stages.txt there", options.dump_ir));
    }
  }

  // The graph after `stage`; `input` names the dump it was made from and `invocation` the pass
  // with its options (both empty for the forward graph). Returns the dump's file name.
  std::string done(std::string_view stage, const ir::Graph& g, const std::string& input, const std::string& invocation) {
    try {
      ir::verify_or_throw(g);
    } catch (const ir::VerifyError& e) {
      throw ir::Error(fmt::format("after pass {}: {} (bertc-opt reproduces passes one by one)", stage, e.what()));
    }
    ++count_;
    const std::string file = fmt::format("{:02d}-{}-{}.ir", count_, stage, g.name());
    if (options_.print_ir_after_all) std::cerr << fmt::format("// after {} ({})\n", stage, g.name()) << ir::print(g);
    if (!options_.dump_ir.empty()) {
      std::ofstream(std::filesystem::path(options_.dump_ir) / file) << ir::print(g);
      if (input.empty()) manifest_ << fmt::format("{}: the forward graph (bertc compile CONFIG --emit ir)\n", file);
      else manifest_ << fmt::format("{}: bertc-opt {} --passes='{}'\n", file, input, invocation);
    }
    if (after_) after_(stage, g);
    return file;
  }

 private:
  const CompileOptions& options_;
  const AfterStage& after_;
  std::ofstream manifest_;
  int count_ = 0;
};

}  // namespace

TrainingProgram compile_training(ir::Graph forward, const CompileOptions& options, const OptimizerOptions& optimizer,
                                 const AfterStage& after_stage) {
  Stages stages(options, after_stage);
  PassContext context{{options, optimizer}, {}};
  TrainingProgram program{std::move(forward), ir::Graph(), {}};
  std::string step_file = stages.done("frontend", program.step, "", ""), optimizer_file;
  auto run = [&](const PassInfo& pass, ir::Graph& g, std::string& file) {
    pass.run(g, context);
    file = stages.done(pass.name, g, file, invocation_text(pass, context.options));
  };
  for (const PassInfo& pass : registered_passes()) {
    if (pass.enabled && !pass.enabled(context.options)) continue;
    switch (pass.graphs) {
      case PipelineGraphs::None: break;
      case PipelineGraphs::Step: run(pass, program.step, step_file); break;
      case PipelineGraphs::MakesOptimizer:
        program.optimizer = program.step;
        optimizer_file = step_file;
        run(pass, program.optimizer, optimizer_file);
        break;
      case PipelineGraphs::Optimizer: run(pass, program.optimizer, optimizer_file); break;
      case PipelineGraphs::StepAndOptimizer:
        run(pass, program.step, step_file);
        run(pass, program.optimizer, optimizer_file);
        break;
    }
  }
  program.recompute = context.recompute;
  return program;
}

ir::Graph compile_evaluation(ir::Graph forward, const CompileOptions& options) {
  PassContext context{{options, {}}, {}};
  for (const PassInfo& pass : registered_passes()) {
    if (!pass.on_evaluation_graph || (pass.enabled && !pass.enabled(context.options))) continue;
    pass.run(forward, context);
    try {
      ir::verify_or_throw(forward);
    } catch (const ir::VerifyError& e) {
      throw ir::Error(fmt::format("after pass {} (evaluation graph): {}", pass.name, e.what()));
    }
  }
  return forward;
}

}  // namespace bertc::passes
