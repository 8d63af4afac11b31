// The trainer's graph runners: reference executor or compiled plan (see graph_runner.h).
#include "train/graph_runner.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "codegen/render.h"
#include "runtime/plan_executor.h"

namespace bertc::train {
namespace {

// Per group, the position after which all of its values and those of the groups before are
// written, given each value's last writer; `end` for a value nobody writes.
std::vector<size_t> ready_positions(const std::vector<std::vector<ir::ValueId>>& groups,
                                    const std::function<std::optional<size_t>(ir::ValueId)>& last_writer, size_t end) {
  std::vector<size_t> ready;
  for (const auto& group : groups) {
    size_t after = ready.empty() ? 0 : ready.back();
    for (ir::ValueId v : group) after = std::max(after, last_writer(v).value_or(end));
    ready.push_back(after);
  }
  return ready;
}

class ReferenceRunner : public GraphRunner {
 public:
  ReferenceRunner(const ir::Graph& graph, std::vector<std::string> fetch)
      : graph_(graph), executor_(graph), fetch_(std::move(fetch)) {}
  reference::RunResult<float> run(ir::Environment<float>& env, const std::set<std::string>& leave) override {
    std::vector<std::string> fetch;
    for (const std::string& name : fetch_)
      if (!leave.count(name)) fetch.push_back(name);
    if (!hooks_on_ || groups_.empty()) return executor_.run(env, fetch);
    return executor_.run(env, fetch, [&](size_t op, std::vector<ir::HostTensor<float>>& values) {
      auto data = [&](size_t g) {
        GroupData d;
        for (ir::ValueId v : groups_[g]) d.push_back(values[v].real.data());
        return d;
      };
      for (size_t g = 0; g < groups_.size(); ++g)
        if (ready_at_[g] == op) ready_(g, data(g));
      if (op == end_) {
        std::vector<GroupData> all;
        for (size_t g = 0; g < groups_.size(); ++g) all.push_back(data(g));
        done_(all);
      }
    });
  }
  void add_value_hooks(std::vector<std::vector<ir::ValueId>> groups, std::function<void(size_t, const GroupData&)> ready,
                       std::function<void(const std::vector<GroupData>&)> done) override {
    // The op before the first update ends the computing (the schedule puts the updates last,
    // but for constants, which compute nothing).
    size_t first_update = graph_.ops().size();
    for (size_t i = 0; i < graph_.ops().size() && first_update == graph_.ops().size(); ++i)
      if (graph_.ops()[i].kind == ir::OpKind::Update) first_update = i;
    if (first_update == 0) throw std::logic_error("a graph whose first op is an update computes nothing to hook");
    end_ = first_update - 1;
    ready_at_ = ready_positions(
        groups, [&](ir::ValueId v) { return std::optional<size_t>(graph_.value(v).producer); }, end_);
    groups_ = std::move(groups);
    ready_ = std::move(ready);
    done_ = std::move(done);
  }
  void set_hooks(bool on) override { hooks_on_ = on; }

 private:
  const ir::Graph& graph_;
  reference::Executor<float> executor_;
  std::vector<std::string> fetch_;
  std::vector<std::vector<ir::ValueId>> groups_;
  std::vector<size_t> ready_at_;
  size_t end_ = 0;
  std::function<void(size_t, const GroupData&)> ready_;
  std::function<void(const std::vector<GroupData>&)> done_;
  bool hooks_on_ = false;
};

class PlanRunner : public GraphRunner {
 public:
  // `graph` is with_fetched_outputs(..., fetch), `kernels` rendered for it.
  PlanRunner(const ir::Graph& graph, std::vector<std::string> fetch, codegen::GraphKernels kernels,
             std::shared_ptr<runtime::Device> device, std::shared_ptr<runtime::ResidentState> state, runtime::Launching launching)
      : graph_(graph), fetch_(std::move(fetch)), outputs_(graph.outputs().size() - std::min(fetch_.size(), graph.outputs().size())),
        device_(std::move(device)), state_(std::move(state)) {
    for (size_t i = 0; i < fetch_.size(); ++i)
      if (outputs_ + i >= graph_.outputs().size() || graph_.outputs()[outputs_ + i] != graph_.find(fetch_[i]))
        throw std::invalid_argument(fmt::format(
            "the compiled program does not output '{}', which training reads: {}", fetch_[i],
            graph_.find(fetch_[i]) ? "compile it again with this bertc"
                                   : "its model has no such value (training needs bertc's pretraining losses)"));
    executor_ = std::make_unique<runtime::PlanExecutor>(graph_, std::move(kernels), *device_, state_, launching);
  }

  reference::RunResult<float> run(ir::Environment<float>& env, const std::set<std::string>& leave) override {
    const std::vector<bool> download = wanted(leave);
    return result(executor_->run(env, &download), download);
  }

  std::pair<reference::RunResult<float>, reference::RunResult<float>> run_with(PlanRunner& next,
                                                                               ir::Environment<float>& env,
                                                                               const std::set<std::string>& leave) {
    const std::vector<bool> download = wanted(leave), next_download = next.wanted({});
    auto [mine, theirs] = executor_->run_with(*next.executor_, env, &download, &next_download);
    return {result(std::move(mine), download), next.result(std::move(theirs), next_download)};
  }

  void download_state(ir::Environment<float>& env) override {
    if (state_) state_->download(env);
  }
  void download_state(const std::vector<std::string>& names, ir::Environment<float>& env) override {
    if (state_) state_->download(names, env);
  }
  void upload_state(const std::vector<std::string>& names, const ir::Environment<float>& env) override {
    if (state_) state_->upload_named(names, env);
  }
  runtime::PlanExecutor* plan() override { return executor_.get(); }
  void profile_next_run(std::vector<runtime::LaunchTime>* times) override { executor_->profile_next_run(times); }
  void add_value_hooks(std::vector<std::vector<ir::ValueId>> groups, std::function<void(size_t, const GroupData&)> ready,
                       std::function<void(const std::vector<GroupData>&)> done) override {
    std::vector<GroupData> data;  // the plan's buffers do not move: the same data every run
    for (const auto& group : groups) {
      data.emplace_back();
      for (ir::ValueId v : group) data.back().push_back(static_cast<float*>(executor_->value_address(v)));
    }
    const size_t end = executor_->kernels().kernels.size();
    const std::vector<size_t> ready_at =
        ready_positions(groups, [&](ir::ValueId v) { return executor_->last_writer(v); }, end);
    for (size_t g = 0; g < groups.size(); ++g) executor_->add_hook(ready_at[g], [ready, g, d = data[g]] { ready(g, d); });
    executor_->add_hook(end, [done = std::move(done), data] { done(data); });
  }
  void set_hooks(bool on) override { executor_->set_hooks(on); }

 private:
  // Per output of the plan: bring it back (every graph output, the fetched values not in `leave`).
  std::vector<bool> wanted(const std::set<std::string>& leave) const {
    std::vector<bool> download(outputs_ + fetch_.size(), true);
    for (size_t i = 0; i < fetch_.size(); ++i) download[outputs_ + i] = !leave.count(fetch_[i]);
    return download;
  }

  reference::RunResult<float> result(std::vector<ir::HostTensor<float>> all,
                                     const std::vector<bool>& download) const {
    reference::RunResult<float> r;
    for (size_t i = 0; i < all.size(); ++i) {
      if (i < outputs_) r.outputs.push_back(std::move(all[i]));
      else if (download[i]) r.fetched[fetch_[i - outputs_]] = std::move(all[i]);
    }
    return r;
  }

  ir::Graph graph_;  // the compiled graph with the fetched values as extra outputs
  std::vector<std::string> fetch_;
  size_t outputs_;
  std::shared_ptr<runtime::Device> device_;
  std::shared_ptr<runtime::ResidentState> state_;
  std::unique_ptr<runtime::PlanExecutor> executor_;
};

}  // namespace

void GraphRunner::profile_next_run(std::vector<runtime::LaunchTime>* /*times*/) {
  throw std::logic_error("a profile times a compiled plan's launches; the reference executor runs none");
}

std::pair<reference::RunResult<float>, reference::RunResult<float>> run_together(
    GraphRunner& first, GraphRunner& second, ir::Environment<float>& env, const std::set<std::string>& leave) {
  auto* a = dynamic_cast<PlanRunner*>(&first);
  auto* b = dynamic_cast<PlanRunner*>(&second);
  if (a && b) return a->run_with(*b, env, leave);
  auto r = first.run(env, leave);
  return {std::move(r), second.run(env)};
}

std::unique_ptr<GraphRunner> reference_runner(const ir::Graph& graph, std::vector<std::string> fetch) {
  return std::make_unique<ReferenceRunner>(graph, std::move(fetch));
}

ir::Graph with_fetched_outputs(ir::Graph graph, const std::vector<std::string>& fetch) {
  for (const std::string& name : fetch) {
    const auto v = graph.find(name);
    if (!v) throw std::invalid_argument(fmt::format("the compiled graph has no value '{}' to fetch", name));
    graph.add_output(*v);
  }
  return graph;
}

std::unique_ptr<GraphRunner> plan_runner(const ir::Graph& graph, std::vector<std::string> fetch,
                                         const codegen::RenderTarget& target, std::shared_ptr<runtime::Device> device,
                                         std::shared_ptr<runtime::ResidentState> state, runtime::Launching launching) {
  const ir::Graph runnable = with_fetched_outputs(graph, fetch);
  codegen::GraphKernels kernels = codegen::render_graph(runnable, target);
  return std::make_unique<PlanRunner>(runnable, std::move(fetch), std::move(kernels), std::move(device),
                                      std::move(state), launching);
}

std::unique_ptr<GraphRunner> compiled_plan_runner(const ir::Graph& runnable, std::vector<std::string> fetch,
                                                  codegen::GraphKernels kernels, std::shared_ptr<runtime::Device> device,
                                                  std::shared_ptr<runtime::ResidentState> state,
                                                  runtime::Launching launching) {
  return std::make_unique<PlanRunner>(runnable, std::move(fetch), std::move(kernels), std::move(device),
                                      std::move(state), launching);
}

}  // namespace bertc::train
