// Running the registry's passes in order, verifying, printing and dumping every stage.
#include "passes/pipeline.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>
#include <vector>
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/registry.h"

namespace bertc::passes {
namespace {

// The stages of an earlier dump into the same folder (the NN-<stage>-<graph>.ir its stages.txt
// lists, and stages.txt), which would otherwise mix with this one's (a pipeline with other options
// has other stages). Every other file is the user's and stays; one named as a stage that no
// dump's list names (a hand-edited stage, say) is refused before anything is removed: this dump's
// could write over it, and a sweep by name removed such files silently.
std::set<std::string> earlier_dump_stages(const std::filesystem::path& folder) {
  static const std::regex stage_file(R"(\d\d-[A-Za-z0-9_-]+\.ir)");
  std::set<std::string> listed;
  // A stages.txt that is not a dump's list (its lines name the stages' files) is the user's: the
  // folder is not a dump's, and nothing in it is removed or written over.
  if (std::ifstream list(folder / "stages.txt"); list) {
    for (std::string line; std::getline(list, line);) {
      std::smatch m;
      if (!std::regex_search(line, m, std::regex(R"(^(\d\d-[A-Za-z0-9_-]+\.ir): )")))
        throw std::runtime_error(fmt::format("--dump-ir {}: holds a stages.txt that is not a dump's (a line of it: "
                                             "'{}'): give an empty or new folder, or an earlier dump's",
                                             folder.string(), line.substr(0, 60)));
      listed.insert(m[1].str());
    }
  }
  // (a listed file is the dump's while it holds IR as the printer writes it, or nothing yet: a
  // file of other bytes under a stage's name is the user's, though the list names it)
  auto holds_a_stage = [&](const std::filesystem::path& file) {
    std::error_code ec;
    if (std::filesystem::is_symlink(file, ec) || !std::filesystem::is_regular_file(file, ec)) return false;
    std::ifstream in(file);
    std::string start(7, '\0');
    in.read(start.data(), 7);
    return in.gcount() == 0 || start == "graph @";
  };
  std::vector<std::string> foreign;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, stage_file) && (!listed.count(name) || !holds_a_stage(entry.path())))
      foreign.push_back(name);
  }
  std::sort(foreign.begin(), foreign.end());
  if (!foreign.empty())
    throw std::runtime_error(fmt::format("--dump-ir {}: holds {} named as a dump's stage, which no earlier dump "
                                         "wrote (not in its stages.txt, or not IR: yours?): nothing was removed; move "
                                         "{} out, or give an empty or new folder",
                                         folder.string(), fmt::join(foreign, ", "),
                                         foreign.size() == 1 ? "it" : "them"));
  return listed;
}

// The stages an earlier dump listed, and its list, removed from `folder`.
void remove_stages(const std::filesystem::path& folder, const std::set<std::string>& listed) {
  for (const std::string& name : listed) std::filesystem::remove(folder / name);
  std::filesystem::remove(folder / "stages.txt");
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
      // (a whole program's dump: a fine-tuning run's bucket folders in it go too, else the folder
      // mixed this compile's stages with another run's shapes)
      remove_earlier_dumps(folder, {});
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
      // (listed before it is written, and flushed: the list names every stage file the dump made,
      // so that the next dump into the folder removes them and only them)
      if (input.empty()) manifest_ << fmt::format("{}: the forward graph (bertc compile CONFIG --emit ir)\n", file);
      else manifest_ << fmt::format("{}: bertc-opt {} --passes='{}'\n", file, input, invocation);
      manifest_.flush();
      std::ofstream(std::filesystem::path(options_.dump_ir) / file) << ir::print(g);
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

void remove_earlier_dumps(const std::filesystem::path& folder, const std::set<int64_t>& kept_buckets) {
  static const std::regex bucket(R"(seq-(\d{1,9}))");
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec)) return;
  // (every folder checked before any is touched: a refusal removes nothing)
  std::vector<std::pair<std::filesystem::path, std::set<std::string>>> dumps{{folder, earlier_dump_stages(folder)}};
  std::vector<std::filesystem::path> buckets;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || !std::regex_match(name, m, bucket) || kept_buckets.count(std::stoll(m[1].str())))
      continue;
    dumps.emplace_back(entry.path(), earlier_dump_stages(entry.path()));
    // (a folder of that name with no dump's list in it is the user's, empty or not: kept)
    if (std::filesystem::exists(entry.path() / "stages.txt", ec)) buckets.push_back(entry.path());
  }
  for (const auto& [dump, listed] : dumps) remove_stages(dump, listed);
  for (const auto& b : buckets) std::filesystem::remove(b, ec);  // (only when nothing else is left in it)
}

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

namespace {

// One pass on a graph outside compile_training's stages (no dump), verified after it.
void run_verified(const PassInfo& pass, ir::Graph& graph, PassContext& context, std::string_view which) {
  pass.run(graph, context);
  try {
    ir::verify_or_throw(graph);
  } catch (const ir::VerifyError& e) {
    throw ir::Error(fmt::format("after pass {} ({}): {}", pass.name, which, e.what()));
  }
}

}  // namespace

ir::Graph compile_optimizer(const ir::Graph& step, const CompileOptions& options, const OptimizerOptions& optimizer) {
  PassContext context{{options, optimizer}, {}};
  ir::Graph graph;
  bool made = false;
  for (const PassInfo& pass : registered_passes()) {
    if (pass.enabled && !pass.enabled(context.options)) continue;
    if (pass.graphs == PipelineGraphs::MakesOptimizer) {
      graph = step;
      made = true;
    } else if (!made || (pass.graphs != PipelineGraphs::Optimizer && pass.graphs != PipelineGraphs::StepAndOptimizer)) {
      continue;
    }
    run_verified(pass, graph, context, "optimizer graph");
  }
  return graph;
}

ir::Graph compile_evaluation(ir::Graph forward, const CompileOptions& options) {
  PassContext context{{options, {}}, {}};
  for (const PassInfo& pass : registered_passes()) {
    if (!pass.on_evaluation_graph || (pass.enabled && !pass.enabled(context.options))) continue;
    run_verified(pass, forward, context, "evaluation graph");
  }
  return forward;
}

}  // namespace bertc::passes
