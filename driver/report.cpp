// Formatting of graph statistics, parameter lists and the toolchain/GPU probe.
#include "driver/report.h"

#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "data/vocab_identity.h"
#include "ir/stats.h"
#include "support/options_json.h"

namespace bertc::driver {
namespace {

// 110106428 -> "110,106,428"
std::string grouped(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (n < 0 ? "-" : "") + out;
}

std::string giga(double flops) { return fmt::format("{:.2f} GFLOP", flops / 1e9); }
std::string mib(double bytes) { return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024.0)); }

}  // namespace

nlohmann::json stats_json(const run_config::Config& config, const std::string& model_name, const ir::Graph& graph) {
  const ir::GraphStats s = ir::graph_stats(graph);
  const auto& t = config.train;
  nlohmann::json j;
  j["model"] = model_name;
  j["config"] = config.source;
  j["name"] = config.name;
  j["graph"] = graph.name();
  j["parameters"] = s.parameters;
  j["parameter_tensors"] = s.parameter_tensors;
  j["parameter_bytes"] = s.parameter_bytes;
  j["batch"] = {{"batch_size", t.batch_size}, {"seq_len", t.seq_len}, {"input_bytes", s.input_bytes}};
  if (config.finetune_section)  // a task head's labels instead of masked predictions
    j["task"] = {{"task", ir::enum_name(config.finetune.task)}, {"num_labels", config.finetune.num_labels}};
  else
    j["batch"]["max_predictions_per_seq"] = t.max_predictions_per_seq;
  j["ops"] = s.ops;
  j["ops_by_kind"] = s.ops_by_kind;
  j["forward_flops"] = s.flops();
  j["forward_matmul_flops"] = s.matmul_flops;
  j["forward_other_flops"] = s.other_flops;
  j["forward_flops_per_token"] = static_cast<double>(s.flops()) / static_cast<double>(t.batch_size * t.seq_len);
  return j;
}

std::string stats_text(const nlohmann::json& j) {
  const auto& b = j["batch"];
  const double flops = j["forward_flops"].get<double>();
  std::string kinds;
  for (const auto& [kind, count] : j["ops_by_kind"].items()) kinds += fmt::format(" {} {},", kind, count.get<int64_t>());
  if (!kinds.empty()) kinds.pop_back();
  const std::string per_sequence =
      j.contains("task") ? fmt::format("{} head, {} labels", j["task"]["task"].get<std::string>(),
                                       j["task"]["num_labels"].get<int64_t>())
                         : fmt::format("{} masked-LM predictions per sequence",
                                       b["max_predictions_per_seq"].get<int64_t>());
  return fmt::format(
      "model       {} (model {}, {}, graph @{})\n"
      "parameters  {} in {} tensors ({})\n"
      "batch       {} x {} tokens, {}\n"
      "ops         {}:{}\n"
      "forward     {} per step ({} in matmuls, {} other), {:.2f} MFLOP per token\n",
      j["name"].get<std::string>(), j["model"].get<std::string>(), j["config"].get<std::string>(),
      j["graph"].get<std::string>(),
      grouped(j["parameters"].get<int64_t>()), j["parameter_tensors"].get<int64_t>(),
      mib(j["parameter_bytes"].get<double>()), b["batch_size"].get<int64_t>(), b["seq_len"].get<int64_t>(),
      per_sequence, grouped(j["ops"].get<int64_t>()), kinds, giga(flops),
      giga(j["forward_matmul_flops"].get<double>()), giga(j["forward_other_flops"].get<double>()),
      j["forward_flops_per_token"].get<double>() / 1e6);
}

nlohmann::json params_json(const ir::Graph& graph) {
  nlohmann::json list = nlohmann::json::array();
  for (ir::ValueId v : graph.values_of(ir::OpKind::Param)) {
    const auto& value = graph.value(v);
    list.push_back({{"name", value.name},
                    {"dtype", std::string(ir::dtype_name(value.type.dtype))},
                    {"shape", value.type.shape},
                    {"elements", value.type.numel()}});
  }
  return list;
}

std::string params_text(const nlohmann::json& params) {
  std::string out;
  int64_t total = 0;
  for (const auto& p : params) {
    out += fmt::format("{:<60} {}{}  {}\n", p["name"].get<std::string>(), p["dtype"].get<std::string>(),
                       ir::shape_string(p["shape"].get<ir::Shape>()), grouped(p["elements"].get<int64_t>()));
    total += p["elements"].get<int64_t>();
  }
  return out + fmt::format("{} tensors, {} parameters\n", params.size(), grouped(total));
}

namespace {

nlohmann::json figures_json(const passes::GraphFigures& f) {
  return {{"ops", f.ops},
          {"fused_kernels", f.fused_kernels},
          {"launches", f.launches},
          {"flops", {{"forward", f.flops_forward}, {"backward", f.flops_backward}, {"recompute", f.flops_recompute},
                     {"optimizer", f.flops_optimizer}, {"attention_over_rows", f.flops_attention_over_rows}}},
          {"bytes", f.bytes},
          {"seconds", f.seconds}};
}

nlohmann::json memory_json(const passes::MemoryPlan& m) {
  return {{"arena_bytes", m.arena_bytes}, {"live_peak_bytes", m.live_peak_bytes}, {"param_bytes", m.param_bytes},
          {"state_bytes", m.state_bytes}, {"input_bytes", m.input_bytes},     {"buffers", m.buffers.size()}};
}

}  // namespace

nlohmann::json report_json(const passes::CompileReport& r) {
  nlohmann::json j;
  const auto& o = r.options;
  j["options"] = support::options_json(passes::compile_option_specs(), o);
  j["recompute_applied"] = r.recompute;
  j["gpu"] = r.gpu ? nlohmann::json(std::string(r.gpu->title)) : nlohmann::json(nullptr);
  j["stages"] = nlohmann::json::array();
  for (const auto& s : r.stages) j["stages"].push_back({{"pass", s.pass}, {"graph", s.graph}, {"figures", figures_json(s.figures)}});
  j["step_graph"] = figures_json(r.step);
  j["optimizer_graph"] = figures_json(r.optimizer);
  j["memory"] = {{"step", memory_json(r.step_memory)}, {"optimizer", memory_json(r.optimizer_memory)},
                 {"activation_bytes", r.step_memory.arena_bytes},
                 {"total_bytes", r.device_bytes()},
                 {"total_bytes_zero1", {{"2", r.device_bytes_with_zero1(2)}, {"4", r.device_bytes_with_zero1(4)},
                                        {"8", r.device_bytes_with_zero1(8)}}}};
  j["per_step"] = {{"micro_batches", r.micro_batches},       {"sequences", r.sequences_per_step},
                   {"launches_before_fusion", r.launches_before_fusion}, {"launches", r.launches_per_step},
                   {"flops", r.flops_per_step},              {"bytes", r.bytes_per_step},
                   {"estimated_seconds", r.step_seconds},    {"estimated_sequences_per_second", r.sequences_per_second}};
  if (r.rows.measured())
    j["rows"] = {{"seq_len", r.rows.seq_len},
                 {"mean_examples_per_row", r.rows.examples},
                 {"token_fraction", r.rows.tokens},
                 {"score_fraction", r.rows.scores},
                 {"tile_fraction", r.rows.tiles},
                 {"real_tokens", r.real_tokens_per_step()},
                 {"real_token_flops", r.real_token_flops},
                 {"real_token_flops_ratio", r.real_token_flops_ratio()}};
  j["compile_seconds"] = r.seconds_to_compile;
  return j;
}

namespace {
bool does_not_fit(const passes::CompileReport& r) {
  return r.gpu && static_cast<double>(r.device_bytes()) > r.gpu->memory_gb * 1e9;
}
// Bytes in GB to a tenth, or in MB below a tenth of a GB (a tiny plan's "0.0 GB" said nothing).
std::string gigabytes(double bytes) {
  return bytes >= 1e8 ? fmt::format("{:.1f} GB", bytes / 1e9) : fmt::format("{:.1f} MB", bytes / 1e6);
}
bool at_smallest(const passes::CompileReport& r) {
  return r.sequences_per_step == r.micro_batches && r.options.recompute == passes::RecomputePolicy::Full;
}
}  // namespace

std::string zero1_memory_line(const passes::CompileReport& r, int ranks) {
  const auto whole = static_cast<double>(r.device_bytes()), sharded = static_cast<double>(r.device_bytes_with_zero1(ranks));
  std::string line = fmt::format("memory: {} a GPU{}", gigabytes(whole), r.gpu ? fmt::format(" of a {}", r.gpu->name) : "");
  if (ranks > 1)
    line += fmt::format(", {} with [train] zero_stage = 1 over {} ranks (the optimizer state split)", gigabytes(sharded), ranks);
  if (ranks > 1 && r.options.precision == passes::Precision::Fp16)
    line += " — but zero_stage = 1 is not built for fp16 loss scaling (fp32, or bf16 on sm_80 and newer)";
  if (!r.gpu) return line;
  const double has = r.gpu->memory_gb * 1e9;
  const bool zero = ranks > 1 && r.options.precision != passes::Precision::Fp16;
  const char* verdict = whole <= has                ? "fits"
                        : zero && sharded <= has ? "fits with zero_stage = 1 only"
                        : zero                   ? "does not fit, with zero_stage = 1 or without"
                                                 : "does not fit";
  return line + fmt::format("; it has {:g} GB: {}", r.gpu->memory_gb, verdict);
}

std::string memory_warning(const passes::CompileReport& r) {
  if (!does_not_fit(r)) return "";
  const double has = r.gpu->memory_gb * 1e9;
  const std::string head = fmt::format("the plan takes {:.1f} GB of device memory and a {} has {:g} GB: it does not fit",
                                       static_cast<double>(r.device_bytes()) / 1e9, r.gpu->title, r.gpu->memory_gb);
  const std::optional<double> smallest =
      r.smallest_device_bytes ? std::optional(static_cast<double>(*r.smallest_device_bytes)) : std::nullopt;
  if (at_smallest(r) || (smallest && *smallest > has)) {
    // (the GPUs of the table it would fit at its smallest, the CUDA context's share aside)
    const double least = smallest.value_or(static_cast<double>(r.device_bytes()));
    std::vector<std::string> roomier;
    for (const passes::GpuSpec& gpu : passes::gpu_specs())
      if (gpu.memory_gb * 1e9 > least) roomier.push_back(fmt::format("{} ({:g} GB)", gpu.name, gpu.memory_gb));
    return head +
           fmt::format("{}: train this model on a GPU with more memory{}, or a smaller model (fewer or narrower layers, "
                       "a shorter seq_len)",
                       at_smallest(r) ? ", at batch_size 1 with recompute = \"full\" already"
                                      : fmt::format(", nor would it at batch_size 1 with recompute = \"full\" ({})",
                                                    gigabytes(least)),
                       roomier.empty() ? " (none in bertc's GPU table has enough)"
                                       : fmt::format(" ({} of bertc's GPU table)", fmt::join(roomier, ", ")));
  }
  std::vector<std::string> fixes;
  if (r.sequences_per_step > r.micro_batches)
    fixes.push_back("lower [train] batch_size (raising gradient_accumulation_steps keeps the global batch)");
  if (r.options.recompute == passes::RecomputePolicy::Auto)  // (recompute = "full" beside its budget is refused)
    fixes.push_back("lower [compile] memory_budget (--memory-budget: recompute auto then recomputes more, up to every "
                    "layer)");
  else if (r.options.recompute != passes::RecomputePolicy::Full)
    fixes.push_back("set [compile] recompute = \"full\" (activations recomputed in the backward)");
  return head + "; " + fmt::format("{}", fmt::join(fixes, ", or ")) +
         (smallest ? fmt::format(" (at batch_size 1 with recompute = \"full\" it takes {})", gigabytes(*smallest)) : "");
}

void note_smallest_plan(passes::CompileReport& r, const frontend::ModelDefinition& model, const run_config::Config& config) {
  if (!does_not_fit(r)) return;
  if (at_smallest(r)) {
    r.smallest_device_bytes = r.device_bytes();
    return;
  }
  run_config::Config smallest = config;
  smallest.train.batch_size = 1;
  smallest.compile.recompute = passes::RecomputePolicy::Full;
  smallest.compile.memory_budget = 0;  // (read by recompute auto only, which refuses it otherwise)
  smallest.compile.dump_ir.clear();    // (its stages would replace the compile's own in the folder)
  smallest.compile.print_ir_after_all = false;
  passes::OptimizerOptions optimizer = smallest.train;
  optimizer.gradient_accumulation_steps = r.micro_batches;  // (as the report's: the data-parallel ranks included)
  r.smallest_device_bytes =
      passes::compile_report(frontend::build_model(model, smallest.model_settings()), smallest.compile, optimizer, 1).device_bytes();
}

std::string rows_text(const passes::CompileReport& r) {
  if (!r.rows.measured()) return "";
  const auto step_flops = static_cast<double>(r.flops_per_step - r.optimizer.flops());
  return fmt::format("  rows       {:.2f} examples a row; {:.1f}% of its {} positions are tokens; attention computes {:.1f}% of "
                     "its square (the tile pairs whose example ids meet, padding's among them), {:.1f}% are scores "
                     "within examples\n"
                     "  per token  {:.2f} MFLOP a real token, {:.3f}x what the real tokens alone take (each example "
                     "alone at its length, no padding; the optimizer aside)\n",
                     r.rows.examples, 100 * r.rows.tokens, r.rows.seq_len, 100 * r.rows.tiles, 100 * r.rows.scores,
                     step_flops / r.real_tokens_per_step() / 1e6, r.real_token_flops_ratio());
}

std::string report_text(const passes::CompileReport& r, const std::string& name) {
  const auto& o = r.options;
  std::string out = fmt::format(
      "compile report: {}, arch {}{}, precision {}, recompute {}, fusion {}, fused attention {}, matmul {}\n\n", name,
      o.arch.text(), r.gpu ? fmt::format(" ({})", r.gpu->title) : "", ir::enum_name(o.precision), r.recompute,
      o.fusion ? "on" : "off", o.fused_attention ? "on" : "off", ir::enum_name(o.matmul));
  out += fmt::format("{:<11} {:<9} {:>6} {:>6} {:>8} {:>10} {:>10} {:>10} {:>10} {:>9}\n", "after", "graph", "ops", "fused",
                     "launches", "fwd GFLOP", "bwd GFLOP", "recompute", "optimizer", "GB moved");
  for (const auto& s : r.stages) {
    const auto& f = s.figures;
    out += fmt::format("{:<11} {:<9} {:>6} {:>6} {:>8} {:>10.1f} {:>10.1f} {:>10.1f} {:>10.2f} {:>9.2f}\n", s.pass, s.graph, f.ops,
                       f.fused_kernels, f.launches, f.flops_forward / 1e9, f.flops_backward / 1e9, f.flops_recompute / 1e9,
                       f.flops_optimizer / 1e9, f.bytes / 1e9);
  }
  const int64_t total = r.device_bytes();
  out += fmt::format("\nper optimizer step ({} micro-batch{} of {} sequences):\n", r.micro_batches,
                     r.micro_batches == 1 ? "" : "es", r.sequences_per_step / r.micro_batches);
  out += fmt::format("  launches   {} before fusion, {} after ({:.1f}%)\n", r.launches_before_fusion, r.launches_per_step,
                     100.0 * double(r.launches_per_step) / double(std::max<int64_t>(1, r.launches_before_fusion)));
  out += fmt::format("  FLOPs      {:.1f} GFLOP (forward {:.1f}, backward {:.1f}, recompute {:.1f}, optimizer {:.2f})\n",
                     r.flops_per_step / 1e9, r.micro_batches * r.step.flops_forward / 1e9,
                     r.micro_batches * r.step.flops_backward / 1e9, r.micro_batches * r.step.flops_recompute / 1e9,
                     r.optimizer.flops_optimizer / 1e9);
  out += rows_text(r);
  out += fmt::format("  bytes      {:.2f} GB read and written by kernels\n", r.bytes_per_step / 1e9);
  out += fmt::format("  memory     activations {} planned ({} live peak), params {}, optimizer state {}, inputs {}; "
                     "total {}\n",
                     mib(r.step_memory.arena_bytes), mib(r.step_memory.live_peak_bytes), mib(r.step_memory.param_bytes),
                     mib(r.optimizer_memory.state_bytes), mib(r.step_memory.input_bytes), mib(total));
  if (const std::string warning = memory_warning(r); !warning.empty()) out += "  warning    " + warning + "\n";
  {
    // (ZeRO stage 1 splits the optimizer state by whole tensors: the rank with the most keeps a
    // little more than its fraction)
    int64_t kept = 0;
    for (int64_t b : r.param_state_bytes) kept += b;
    std::vector<std::string> per_rank;
    for (int ranks : {2, 4, 8}) per_rank.push_back(fmt::format("{} ranks {}", ranks, mib(r.device_bytes_with_zero1(ranks))));
    out += fmt::format("  per rank   total with [train] zero_stage = 1, the {} of per-param optimizer state split: {}\n",
                       mib(kept), fmt::join(per_rank, ", "));
  }
  if (r.gpu)
    out += fmt::format("  estimate   {:.2f} ms per step, {:.0f} sequences/s on {} (roofline per launch: max(FLOPs / peak, "
                       "bytes / bandwidth) + 1 us)\n",
                       r.step_seconds * 1e3, r.sequences_per_second, r.gpu->title);
  else
    out += "  estimate   none: give --arch (sm_61 ... sm_90 or a GPU name) for a roofline step time\n";
  out += fmt::format("  compile    {:.2f} s for all passes and planning\n", r.seconds_to_compile);
  return out;
}

nlohmann::json info_json(const cuda::CudaDriverProbe& driver, const std::vector<cuda::NvrtcProbe>& nvrtc,
                         const cuda::CublasProbe& cublas) {
  nlohmann::json j;
  j["cublas"] = {{"found", cublas.library.loaded()}, {"path", cublas.library.path()}, {"origin", cublas.origin},
                 {"version", cublas.library.loaded() ? fmt::format("{}.{}", cublas.major, cublas.minor) : ""},
                 {"tried", cublas.tried}};
  j["cuda_driver"] = {{"found", driver.loaded}, {"path", driver.path}, {"version", driver.version},
                      {"error", driver.error}};
  j["gpus"] = nlohmann::json::array();
  for (const auto& d : driver.devices)
    j["gpus"].push_back({{"ordinal", d.ordinal}, {"name", d.name}, {"arch", fmt::format("sm_{}", d.arch)},
                         {"multiprocessors", d.multiprocessors}, {"memory_bytes", d.memory_bytes}});
  j["nvrtc"] = nlohmann::json::array();
  std::map<int, std::string> archs;  // arch -> first NVRTC that reaches it
  for (const auto& p : nvrtc) {
    nlohmann::json e = {{"candidate", p.candidate}, {"origin", p.origin}, {"found", p.found.has_value()}};
    if (p.found) {
      const std::string version = fmt::format("{}.{}", p.found->major, p.found->minor);
      e["path"] = p.found->library.path();
      e["version"] = version;
      e["archs"] = nlohmann::json::array();
      for (int a : p.found->archs) {
        e["archs"].push_back(fmt::format("sm_{}", a));
        archs.emplace(a, version);
      }
    } else {
      e["error"] = p.error;
    }
    j["nvrtc"].push_back(e);
  }
  j["compile_archs"] = nlohmann::json::array();  // ascending arch, with the NVRTC that reaches it
  for (const auto& [a, version] : archs) j["compile_archs"].push_back({{"arch", fmt::format("sm_{}", a)}, {"nvrtc", version}});
  return j;
}

std::string info_text(const nlohmann::json& j) {
  std::string out;
  const auto& d = j["cuda_driver"];
  if (d["found"].get<bool>())
    out += fmt::format("CUDA driver  {} (CUDA {}.{})\n", d["path"].get<std::string>(),
                       d["version"].get<int>() / 1000, d["version"].get<int>() % 1000 / 10);
  else
    out += "CUDA driver  none\n";
  if (j["gpus"].empty())
    out += fmt::format("GPUs         none ({}); training runs on the CPU\n", d["error"].get<std::string>());
  for (const auto& g : j["gpus"])
    out += fmt::format("GPU {}        {}, {}, {} SMs, {}\n", g["ordinal"].get<int>(), g["name"].get<std::string>(),
                       g["arch"].get<std::string>(), g["multiprocessors"].get<int>(), mib(g["memory_bytes"].get<double>()));
  out += "NVRTC\n";
  for (const auto& n : j["nvrtc"]) {
    if (n["found"].get<bool>()) {
      std::vector<std::string> archs = n["archs"].get<std::vector<std::string>>();
      const std::string candidate = n["candidate"].get<std::string>(), path = n["path"].get<std::string>();
      out += fmt::format("  {} [{}]: NVRTC {}, targets {}\n", candidate == path ? path : candidate + " -> " + path,
                         n["origin"].get<std::string>(), n["version"].get<std::string>(), fmt::join(archs, " "));
    } else {
      out += fmt::format("  {} [{}]: not usable ({})\n", n["candidate"].get<std::string>(),
                         n["origin"].get<std::string>(), n["error"].get<std::string>());
    }
  }
  std::vector<std::string> targets;
  for (const auto& t : j["compile_archs"])
    targets.push_back(fmt::format("{} (NVRTC {})", t["arch"].get<std::string>(), t["nvrtc"].get<std::string>()));
  const auto& blas = j["cublas"];
  out += blas["found"].get<bool>()
             ? fmt::format("cuBLAS       {} {} [{}]\n", blas["version"].get<std::string>(), blas["path"].get<std::string>(),
                           blas["origin"].get<std::string>())
             : "cuBLAS       none (set BERTC_CUBLAS to a libcublas.so): matrix products run as generated kernels\n";
  for (const auto& t : blas["tried"]) out += fmt::format("  not taken: {}\n", t.get<std::string>());
  if (j.contains("mpi")) {
    const auto& m = j["mpi"];
    out += m["built"].get<bool>()
               ? fmt::format("MPI          {}: data-parallel ranks with mpirun -np N (this process: {} of {}, launched by {})\n",
                             m["version"].get<std::string>(), m["rank"].get<int>(), m["ranks"].get<int>(),
                             m["launcher"].get<std::string>())
               : "MPI          none (built with BERTC_MPI off): one rank only\n";
  }
  if (j.contains("gloo")) {
    const auto& g = j["gloo"];
    out += g["built"].get<bool>()
               ? fmt::format("Gloo         {}: data-parallel ranks that torchrun (or RANK, WORLD_SIZE, MASTER_ADDR) "
                             "starts\n",
                             g["version"].get<std::string>())
               : "Gloo         none (built with BERTC_GLOO off): ranks need mpirun, not torchrun\n";
  }
  if (j.contains("nccl")) {
    const auto& n = j["nccl"];
    out += n["found"].get<bool>()
               ? fmt::format("NCCL         {} {} [{}]: a GPU's gradient sums in its CUDA Graph\n",
                             n["version"].get<std::string>(), n["path"].get<std::string>(),
                             n["origin"].get<std::string>())
               : "NCCL         none (scripts/setup.sh installs it, or set BERTC_NCCL): a GPU's gradients are summed "
                 "on the host\n";
    for (const auto& t : n["tried"]) out += fmt::format("  not taken: {}\n", t.get<std::string>());
  }
  out += fmt::format("can compile  {}\n", targets.empty() ? "none: no NVRTC found (set BERTC_NVRTC to a libnvrtc.so, "
                                                            "or run scripts/setup.sh)"
                                                          : fmt::format("{}", fmt::join(targets, ", ")));
  return out;
}

namespace {

struct FamilyFigures {
  int kernels = 0, launches = 0, max_registers = 0, max_shared = 0, spill_bytes = 0;
  // Matrix kernels: the one whose main loop does the fewest math instructions per shared load.
  std::optional<codegen::LoopMix> worst_loop;
};

std::string loop_text(const std::optional<codegen::LoopMix>& m) {
  return m ? fmt::format("{:.1f} ({}/{})", m->math_per_load(), m->math, m->shared_loads) : "-";
}

std::map<std::string, FamilyFigures> by_family(const codegen::CompiledProgram& p) {
  std::map<std::string, FamilyFigures> f;
  std::set<std::string> seen;
  for (const codegen::GraphKernels* g : {&p.step, &p.optimizer})
    for (const codegen::KernelSpec& k : g->kernels) {
      const std::string family(ir::enum_name(k.family));
      FamilyFigures& x = f[k.strategy.empty() ? family : family + " " + k.strategy];
      ++x.launches;
      if (!seen.insert(k.name).second) continue;
      ++x.kernels;
      if (k.source.empty()) continue;  // a cuBLAS-only launch: no kernel of ours
      const codegen::PtxasInfo& i = p.images.at(k.name).ptxas;
      x.max_registers = std::max(x.max_registers, i.registers);
      x.max_shared = std::max(x.max_shared, i.shared_bytes);
      x.spill_bytes += i.spill_store_bytes + i.spill_load_bytes;
      const codegen::LoopMix& m = p.images.at(k.name).main_loop;
      if (!k.strategy.empty() && m.found() && (!x.worst_loop || m.math_per_load() < x.worst_loop->math_per_load())) x.worst_loop = m;
    }
  return f;
}

}  // namespace

nlohmann::json kernels_json(const codegen::CompiledProgram& p, bool compiled_now) {
  nlohmann::json j;
  j["arch"] = p.options.arch.text();
  j["nvrtc"] = p.nvrtc_version;
  // (a loaded program's stats are zeros: said as figures, they read as a compile of 0 s)
  if (compiled_now) {
    j["compile_seconds"] = p.stats.seconds;
    j["cache_hits"] = p.stats.cache_hits;
  }
  j["distinct_kernels"] = p.images.size();
  j["matrix_ops"] = nlohmann::json::array();
  for (const codegen::KernelSpec& k : p.step.kernels)
    if (!k.strategy.empty())
      j["matrix_ops"].push_back({{"op_index", k.op_index}, {"family", ir::enum_name(k.family)}, {"label", k.label}, {"strategy", k.strategy},
                                 {"kernel", k.name}});
  for (const auto& [family, x] : by_family(p)) {
    j["families"][family] = {{"kernels", x.kernels}, {"launches", x.launches}, {"max_registers", x.max_registers},
                             {"max_shared_bytes", x.max_shared}, {"spill_bytes", x.spill_bytes}};
    if (x.worst_loop)
      j["families"][family]["main_loop_min"] = {{"math", x.worst_loop->math}, {"shared_loads", x.worst_loop->shared_loads}};
  }
  j["per_kernel"] = nlohmann::json::array();
  std::set<std::string> seen;
  for (const codegen::GraphKernels* g : {&p.step, &p.optimizer})
    for (const codegen::KernelSpec& k : g->kernels) {
      if (!seen.insert(k.name).second || k.source.empty()) continue;
      const codegen::PtxasInfo& i = p.images.at(k.name).ptxas;
      j["per_kernel"].push_back({{"name", k.name}, {"family", ir::enum_name(k.family)}, {"strategy", k.strategy}, {"first_use", k.label},
                                 {"registers", i.registers}, {"shared_bytes", i.shared_bytes}, {"stack_bytes", i.stack_bytes},
                                 {"spill_bytes", i.spill_store_bytes + i.spill_load_bytes}, {"ptx", p.images.at(k.name).ptx},
                                 {"main_loop", {{"math", p.images.at(k.name).main_loop.math},
                                                {"shared_loads", p.images.at(k.name).main_loop.shared_loads}}}});
    }
  return j;
}

std::string kernels_text(const codegen::CompiledProgram& p, bool compiled_now) {
  const std::string how =
      compiled_now ? fmt::format(", compiled in {:.2f} s ({} from the cache)", p.stats.seconds, p.stats.cache_hits) : "";
  std::string out = fmt::format(
      "\nkernels for {} (NVRTC {}): {} distinct{}\n"
      "  {:<26} {:>7} {:>9} {:>10} {:>13} {:>12}  {}\n",
      p.options.arch.text(), p.nvrtc_version, p.images.size(), how, "family (strategy)", "kernels", "launches", "registers",
      "shared bytes", "spill bytes", "main loop math/shared load");
  for (const auto& [family, x] : by_family(p))
    out += fmt::format("  {:<26} {:>7} {:>9} {:>10} {:>13} {:>12}  {}\n", family, x.kernels, x.launches, x.max_registers,
                       x.max_shared, x.spill_bytes, loop_text(x.worst_loop));
  out += "  (registers and shared bytes: the most any kernel of the family uses; launches per micro-batch and optimizer step;\n"
         "   main loop: fma/mma per ld.shared/ldmatrix instruction in the PTX of each kernel's busiest loop, the family's\n"
         "   lowest, with that loop's counts; a simt GEMM does 16 with 128-bit shared loads, 4 with scalar ones)\n";
  out += "\nmatrix ops of the step and the strategy each got (rule: codegen/matrix_strategy.h)\n";
  for (const codegen::KernelSpec& k : p.step.kernels)
    if (k.library)
      out += fmt::format("  op {:<5} {:<10} {:<10} {}x{}x{} (x{}){}  {}\n", k.op_index, ir::enum_name(k.family), k.strategy, k.library->m,
                         k.library->n, k.library->k, k.library->batch, k.source.empty() ? "" : " + epilogue kernel", k.label);
    else if (!k.strategy.empty())
      out += fmt::format("  op {:<5} {:<10} {:<10} grid {}x{}x{} block {}  {}\n", k.op_index, ir::enum_name(k.family), k.strategy, k.grid.x,
                         k.grid.y, k.grid.z, k.block.x, k.label);
  return out;
}

nlohmann::json bertx_json(const codegen::CompiledProgram& p) {
  nlohmann::json j = kernels_json(p, false);
  j["model"] = p.model;
  j["ranks"] = p.ranks;
  j["options"] = support::options_json(passes::compile_option_specs(), p.options);
  j["step_kernels"] = p.step.kernels.size();
  j["optimizer_kernels"] = p.optimizer.kernels.size();
  size_t bytes = 0;
  for (const auto& [name, g] : p.images) bytes += g.image.size();
  j["image_bytes"] = bytes;
  j["checksums_match"] = true;  // (read_bertx refuses a program whose checksums do not)
  // The vocabulary recorded at compile time (null: none, and training it checks none).
  const std::optional<data::VocabRecord> vocab = data::vocab_from_metadata(p.vocab);
  if (!vocab) {
    j["vocab"] = nullptr;
    return j;
  }
  j["vocab"] = {{"xxh3", vocab->xxh3}, {"path", vocab->path}, {"tokens", nullptr}};
  if (vocab->tokens > 0) j["vocab"]["tokens"] = vocab->tokens;  // (0: an older bertc recorded only the hash)
  return j;
}

std::string bertx_text(const codegen::CompiledProgram& p, const std::string& path) {
  size_t bytes = 0, ptx = 0;
  for (const auto& [name, g] : p.images) bytes += g.image.size(), ptx += g.ptx;
  std::string out = fmt::format(
      "{}: {} compiled for {}, precision {}, recompute {}{}\n  step: {} kernel launches; optimizer: {} "
      "kernel launches\n  {} images ({} as PTX), {:.1f} KiB; every checksum matches\n",
      path, p.model, p.options.arch.text(), ir::enum_name(p.options.precision), ir::enum_name(p.options.recompute),
      p.ranks > 1 ? fmt::format(", {} data-parallel ranks", p.ranks) : "",
      p.step.kernels.size(),
      p.optimizer.kernels.size(), p.images.size(), ptx, static_cast<double>(bytes) / 1024);
  const std::optional<data::VocabRecord> vocab = data::vocab_from_metadata(p.vocab);
  out += !vocab ? "  vocab: none recorded (training it checks none)\n"
                : fmt::format("  vocab: {} tokens, xxh3 {} (training it checks it has this one)\n", 
                              vocab->tokens > 0 ? std::to_string(vocab->tokens) : "?", vocab->xxh3);
  return out + kernels_text(p, false);
}

}  // namespace bertc::driver
