// The per-kernel profile (see profile.h).
#include "train/profile.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "ir/enum_names.h"
#include "passes/cost_model.h"
#include "support/options_json.h"

namespace bertc::train {

double Profile::seconds() const {
  double s = 0;
  for (const ProfileRow& r : rows) s += r.seconds;
  return s;
}

double Profile::estimate_seconds() const {
  double s = 0;
  for (const ProfileRow& r : rows) s += r.estimate_seconds;
  return s;
}

Profile make_profile(int64_t step, const std::string& device, const std::vector<TimedPlan>& plans,
                     const std::optional<passes::GpuSpec>& gpu, passes::Precision precision,
                     const passes::RowFractions& rows) {
  Profile p;
  p.step = step;
  p.device = device;
  p.gpu = gpu ? std::string(gpu->title) : "";
  for (const TimedPlan& t : plans)
    for (const runtime::LaunchTime& time : t.times) {
      const codegen::KernelSpec& k = t.plan->kernels().kernels.at(time.launch);
      const ir::Op& op = t.plan->graph().ops().at(k.op_index);
      const passes::LaunchCost cost = passes::launch_cost(t.plan->graph(), op, gpu, precision, rows);
      p.rows.push_back({t.graph, time.launch, k.op_index, k.name, std::string(ir::enum_name(k.family)), k.strategy, k.label,
                        cost.flops, cost.bytes, time.seconds, cost.seconds});
    }
  std::stable_sort(p.rows.begin(), p.rows.end(), [](const ProfileRow& a, const ProfileRow& b) { return a.seconds > b.seconds; });
  return p;
}

Profile estimate_for(const Profile& p, const std::vector<NamedPlan>& plans, const std::optional<passes::GpuSpec>& gpu,
                     passes::Precision precision, const passes::RowFractions& rows) {
  Profile out = p;
  out.gpu = gpu ? std::string(gpu->title) : "";
  for (ProfileRow& r : out.rows) {
    const auto plan = std::find_if(plans.begin(), plans.end(), [&](const NamedPlan& n) { return n.graph == r.graph; });
    if (plan == plans.end()) throw std::runtime_error(fmt::format("the profile times a graph '{}' this program lacks", r.graph));
    const auto& kernels = plan->kernels->kernels;
    if (r.launch >= kernels.size() || kernels[r.launch].name != r.kernel || kernels[r.launch].op_index != r.op)
      throw std::runtime_error(fmt::format(
          "the profile is of another program: launch {} of the {} ran {} (op {}), this compile has {}; profile again with "
          "this config and these flags",
          r.launch, r.graph, r.kernel, r.op,
          r.launch < kernels.size() ? fmt::format("{} (op {})", kernels[r.launch].name, kernels[r.launch].op_index)
                                    : fmt::format("only {} launches", kernels.size())));
    // (the compile's own family, strategy and scope of the kernel it matched, as its FLOPs and bytes
    // below: the profile's are what it recorded, and an edit of them moved launches between the
    // per-family totals unseen)
    r.family = std::string(ir::enum_name(kernels[r.launch].family));
    r.strategy = kernels[r.launch].strategy;
    r.scope = kernels[r.launch].label;
    const passes::LaunchCost cost = passes::launch_cost(*plan->ops, plan->ops->ops().at(r.op), gpu, precision, rows);
    r.flops = cost.flops;
    r.bytes = cost.bytes;
    r.estimate_seconds = cost.seconds;
  }
  // (bertc train --profile times every launch of both graphs: a profile with fewer was cut or
  // edited, and its shares would be of a partial total; checked after the kernels match, so a
  // profile of another program is named as that)
  for (const NamedPlan& plan : plans) {
    const size_t timed = static_cast<size_t>(
        std::count_if(out.rows.begin(), out.rows.end(), [&](const ProfileRow& r) { return r.graph == plan.graph; }));
    if (timed < plan.kernels->kernels.size())
      throw std::runtime_error(fmt::format("it times {} of the {} graph's {} launches, and bertc train --profile times every "
                                           "one: a profile cut short or edited; profile the step again",
                                           timed, plan.graph, plan.kernels->kernels.size()));
  }
  return out;
}

namespace {

std::string family_and_strategy(const ProfileRow& r) {
  return r.strategy.empty() ? r.family : fmt::format("{} {}", r.family, r.strategy);
}

std::string ratio_text(double ratio) { return ratio > 0 ? fmt::format("{:.2f}", ratio) : "-"; }

}  // namespace

std::string profile_table(const Profile& p, size_t top) {
  const double total = p.seconds();
  std::string out = fmt::format("profile of step {} on {}: {} launches, {:.3f} ms{}\n", p.step, p.device, p.rows.size(),
                                total * 1e3,
                                p.gpu.empty() ? std::string(" (no GPU to estimate for: compile with --arch to compare)")
                                              : fmt::format(", roofline estimate for {} {:.3f} ms", p.gpu, p.estimate_seconds() * 1e3));
  out += fmt::format("{:>5} {:>9} {:>6} {:>10} {:>8} {:>8} {:>9}  {:<9} {:>5}  {:<24} {}\n", "rank", "graph", "launch", "time us",
                     "share", "TFLOP/s", "GB/s", "vs est.", "op", "family", "scope");
  for (size_t i = 0; i < std::min(top, p.rows.size()); ++i) {
    const ProfileRow& r = p.rows[i];
    out += fmt::format("{:>5} {:>9} {:>6} {:>10.1f} {:>7.1f}% {:>8.3f} {:>9.1f}  {:<9} {:>5}  {:<24} {}\n", i + 1, r.graph, r.launch,
                       r.seconds * 1e6, total > 0 ? 100 * r.seconds / total : 0.0, r.tflops(), r.gbs(), ratio_text(r.ratio()),
                       r.op, family_and_strategy(r), r.scope);
  }
  if (p.rows.size() > top) out += fmt::format("  ... {} faster launches in the JSON\n", p.rows.size() - top);
  struct Sum {
    size_t launches = 0;
    double seconds = 0, estimate = 0;
  };
  std::map<std::string, Sum> families;
  for (const ProfileRow& r : p.rows) {
    Sum& s = families[family_and_strategy(r)];
    ++s.launches;
    s.seconds += r.seconds;
    s.estimate += r.estimate_seconds;
  }
  std::vector<std::pair<std::string, Sum>> by_time(families.begin(), families.end());
  std::stable_sort(by_time.begin(), by_time.end(), [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  out += fmt::format("per family: {:<24} {:>8} {:>10} {:>7} {:>8}\n", "", "launches", "time us", "share", "vs est.");
  for (const auto& [name, s] : by_time)
    out += fmt::format("            {:<24} {:>8} {:>10.1f} {:>6.1f}% {:>8}\n", name, s.launches, s.seconds * 1e6,
                       total > 0 ? 100 * s.seconds / total : 0.0, ratio_text(s.estimate > 0 ? s.seconds / s.estimate : 0));
  return out;
}

nlohmann::json profile_json(const Profile& p) {
  nlohmann::json rows = nlohmann::json::array();
  for (const ProfileRow& r : p.rows)
    rows.push_back({{"graph", r.graph}, {"launch", r.launch}, {"op", r.op}, {"kernel", r.kernel}, {"family", r.family},
                    {"strategy", r.strategy}, {"scope", r.scope}, {"flops", r.flops}, {"bytes", r.bytes},
                    {"seconds", r.seconds}, {"estimate_seconds", r.estimate_seconds}, {"tflops", r.tflops()},
                    {"gbs", r.gbs()}, {"ratio_to_estimate", r.ratio()}});
  return {{"format", "bertc-profile-1"}, {"step", p.step},         {"device", p.device},
          {"gpu", p.gpu},                {"seconds", p.seconds()}, {"estimate_seconds", p.estimate_seconds()},
          {"launches", rows}};
}

Profile profile_from_json(const nlohmann::json& j) {
  try {
    if (j.at("format") != "bertc-profile-1")
      throw std::runtime_error(fmt::format("format {} is not bertc-profile-1", j.at("format").dump()));
    Profile p;
    // (a count, as --profile takes it: nlohmann's own conversion took 2^63 as -2^63 and 2.5 as 2)
    const auto step = support::value_from_json(support::ValueKind::Int, j.at("step"));
    if (!step || std::get<int64_t>(*step) < 1)
      throw std::runtime_error(fmt::format("its \"step\" is {}, not a step (a whole number, 1 or more)", j.at("step").dump()));
    p.step = std::get<int64_t>(*step);
    p.device = j.at("device");
    p.gpu = j.at("gpu");
    std::set<std::pair<std::string, size_t>> seen;
    for (const nlohmann::json& r : j.at("launches")) {
      // (indices as written, never a float cast to one: launch 1e30 read as launch 0)
      for (const char* key : {"launch", "op"})
        if (!r.at(key).is_number_unsigned())
          throw std::runtime_error(fmt::format("a launch's \"{}\" is {}, not an index (a whole number, 0 or more)",
                                               key, r.at(key).dump()));
      // (figures a measurement gives: finite and 0 or more; a negative time made the total negative)
      // (and a time past an hour is no kernel launch's: 1e308 seconds made the total infinite)
      for (const char* key : {"flops", "bytes", "seconds", "estimate_seconds"})
        if (const nlohmann::json& v = r.at(key);
            !v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 ||
            (std::string_view(key).ends_with("seconds") && v.get<double>() > 3600))
          throw std::runtime_error(fmt::format("launch {}'s \"{}\" is {}, not a measured figure (a finite number, 0 "
                                               "or more; a time under an hour)",
                                               r.at("launch").dump(), key, v.dump()));
      p.rows.push_back({r.at("graph"), r.at("launch"), r.at("op"), r.at("kernel"), r.at("family"), r.at("strategy"),
                        r.at("scope"), r.at("flops"), r.at("bytes"), r.at("seconds"), r.at("estimate_seconds")});
      if (!seen.insert({p.rows.back().graph, p.rows.back().launch}).second)
        throw std::runtime_error(fmt::format("launch {} of the {} graph is timed twice: a profile times each launch once",
                                             p.rows.back().launch, p.rows.back().graph));
    }
    if (p.rows.empty()) throw std::runtime_error("it times no launch (\"launches\" is empty)");
    return p;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("not a profile written by bertc train --profile: {}", e.what()));
  }
}

}  // namespace bertc::train
