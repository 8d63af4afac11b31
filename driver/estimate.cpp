// bertc estimate (see estimate.h): the compile report's roofline per GPU, the gradient bytes of
// each compression as the exchange sends them (distributed::compressed_bytes_of), and the
// ring all-reduce over the slowest link (passes/scaling_estimate.h).
#include "driver/estimate.h"

#include <algorithm>

#include <iostream>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "distributed/gradient_exchange.h"
#include "run_config/config.h"
#include "passes/report.h"
#include "passes/scaling_estimate.h"
#include "driver/report.h"
#include "train/data_parallel.h"
#include "train/step_figures.h"

namespace bertc::driver {
namespace {

// The bytes each GPU all-reduces per step under `compression` (after PowerSGD's warm-up), from the
// gradients' shapes (no exchange state is made: a model of any size is estimated).
uint64_t bytes_per_step(const ir::Graph& step, const run_config::TrainConfig& t, distributed::Compression compression,
                        int gpus) {
  distributed::ExchangeOptions o = train::exchange_options(t);
  o.compression = compression;
  return distributed::compressed_bytes_of(train::gradient_tensors(step), o, gpus);
}

// Their collectives' ring steps, each paying a hop's latency.
double latency_hops(const ir::Graph& step, const run_config::TrainConfig& t, distributed::Compression compression,
                    int gpus) {
  distributed::ExchangeOptions o = train::exchange_options(t);
  o.compression = compression;
  return static_cast<double>(distributed::latency_hops_of(train::gradient_tensors(step), o, gpus));
}

std::string money(double dollars) {
  if (dollars >= 1e9) return fmt::format("${:.2g}", dollars);  // (not a row of digits)
  return dollars >= 1e4 ? fmt::format("${:.0f}k", dollars / 1e3) : fmt::format("${:.0f}", dollars);
}

}  // namespace

int estimate(const EstimateArgs& a, const CompileFlags& flags, const frontend::ModelDefinition& model, std::ostream& out) {
  run_config::Config config = run_config::load_config(a.config, model.extra_keys);
  for (const std::string& f : flags.given())
    if (f == "--arch")
      throw std::invalid_argument("--arch: estimate compiles for each GPU --gpu names (--gpu p40 --gpu a100 ...): give "
                                  "those instead");
  config.compile = flags.apply(config.compile);
  passes::ScalingSetup setup;
  setup.gpus_per_machine = a.gpus_per_machine;
  setup.machines = a.machines;
  setup.within = &passes::find_interconnect(a.within, passes::LinkReach::WithinMachine);
  // (a copy: --latency-us sets its hop's latency)
  passes::Interconnect between = passes::find_interconnect(a.between, passes::LinkReach::BetweenMachines);
  if (a.latency_us >= 0) between.hop_us = a.latency_us;
  setup.between = &between;
  // A fine-tuning run is [finetune] epochs x the batches of its data per epoch (bertc finetune
  // counts them at its start); [train] steps is not its length.
  if (config.finetune_section && a.steps <= 0)
    throw std::invalid_argument(fmt::format("{}: a fine-tuning run's steps are [finetune] epochs x its batches per "
                                            "epoch, which depend on its data: give --steps (bertc finetune {} prints "
                                            "'N epochs x M steps = S steps' as it starts)",
                                            a.config, a.config));
  setup.steps = a.steps > 0 ? a.steps : config.train.steps;
  std::vector<distributed::Compression> kinds;
  // (a choice given twice is one row, not two of the same)
  for (const std::string& c : a.compressions)
    if (const auto k = ir::enum_named<distributed::Compression>(c); std::find(kinds.begin(), kinds.end(), k) == kinds.end())
      kinds.push_back(k);
  if (kinds.empty()) kinds = {distributed::Compression::None, distributed::Compression::Fp16, distributed::Compression::PowerSgd};
  // Figures past any machine room, or a global batch past 64 bits, are refused rather than
  // wrapped around into negative ones.
  constexpr int64_t kMostGpus = 1'000'000;
  constexpr double kMostDollars = 1e6;  // an hour of one GPU
  if (a.price > kMostDollars)
    throw std::invalid_argument(fmt::format("--price {:g} dollars per GPU-hour: give a price of at most {:g}", a.price,
                                            kMostDollars));
  const int64_t gpus = int64_t{a.gpus_per_machine} * a.machines;
  if (gpus > kMostGpus)
    throw std::invalid_argument(fmt::format("--gpus-per-machine {} x --machines {} is {} GPUs: estimate counts at most {}",
                                            a.gpus_per_machine, a.machines, gpus, kMostGpus));
  int64_t per_gpu = 0, global = 0;
  if (__builtin_mul_overflow(config.train.batch_size, config.train.gradient_accumulation_steps, &per_gpu) ||
      __builtin_mul_overflow(per_gpu, gpus, &global))
    throw std::invalid_argument(fmt::format("{}: a global batch of {} GPUs x batch_size {} x gradient_accumulation_steps "
                                            "{} is past 2^63 sequences: give smaller figures",
                                            a.config, gpus, config.train.batch_size,
                                            config.train.gradient_accumulation_steps));
  nlohmann::json rows = nlohmann::json::array();
  std::set<std::string> notes;
  // (a link given for a set-up that has none of it was printed as if used)
  if (a.within_given && a.gpus_per_machine == 1)
    notes.insert(fmt::format("note: --within {}: one GPU per machine uses no link within a machine (give "
                             "--gpus-per-machine N to use it)",
                             a.within));
  if (a.latency_us >= 0 && a.machines == 1)
    notes.insert(fmt::format("note: --latency-us {:g}: one machine uses no link between machines (give --machines N "
                             "to use it)",
                             a.latency_us));
  if (a.between_given && a.machines == 1)
    notes.insert(fmt::format("note: --between {}: one machine uses no link between machines (give --machines N to "
                             "use it)",
                             a.between));
  const std::string latency = a.latency_us >= 0 ? fmt::format(" ({:g} us a hop)", a.latency_us) : "";
  std::string text = fmt::format(
      "{}: {} GPU(s) per machine x {} machine(s), {} within, {} between; {} steps of {} sequences per GPU "
      "(global batch {})\n",
      config.name, a.gpus_per_machine, a.machines, a.gpus_per_machine > 1 ? setup.within->title : "nothing",
      a.machines > 1 ? fmt::format("{}{}", setup.between->title, latency) : "nothing", setup.steps, per_gpu, global);
  text += fmt::format("{:<10} {:<10} {:>10} {:>10} {:>11} {:>10} {:>12} {:>8} {:>10} {:>9}\n", "gpu", "gradients", "MiB/step",
                      "compute", "all-reduce", "step", "overlapped", "days", "days (ovl)", "cost");
  // (an attention over rows computes what the data's examples leave: measured once, for every GPU,
  // once the first GPU named is known to be one)
  std::optional<passes::RowFractions> packed;
  std::string flops_note;  // (FLOPs per real token: the same on every GPU of one precision, said once)
  std::vector<std::string> named;  // (a GPU named twice: one row)
  for (const std::string& name : a.gpus)
    if (std::find(named.begin(), named.end(), name) == named.end()) named.push_back(name);
  for (const std::string& name : named) {
    run_config::Config c = config;
    c.compile.arch = passes::Arch::parse(name);
    if (!c.compile.arch.gpu()) throw std::invalid_argument(fmt::format("--gpu {}: name a GPU of the table (p40, v100, a100, ...)", name));
    if (c.compile.precision == passes::Precision::Tf32 && c.compile.arch.sm() < 80)
      throw std::invalid_argument(fmt::format("--gpu {}: precision tf32 needs TF32 tensor cores (sm_80 or newer): "
                                              "estimate it on --gpu a100 (or newer), or with --precision fp32",
                                              name));
    c.compile = passes::resolve_options(c.compile, c.compile.arch);
    if (!packed) packed = train::config_row_fractions(config, std::cerr);
    passes::TrainingProgram program;
    passes::CompileReport report = passes::compile_report(frontend::build_model(model, c.model_settings()), c.compile, c.train,
                                                          c.train.batch_size, &program, *packed);
    note_smallest_plan(report, model, c);
    const passes::GpuSpec& gpu = *c.compile.arch.gpu();
    if (a.gpus_per_machine > 1) {  // (the link inside a machine is used only where it holds several)
      try {
        passes::require_link_of(*setup.within, gpu.name);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(fmt::format("--within {}", e.what()));
      }
    }
    if (packed->measured() && flops_note.empty())
      flops_note = fmt::format("rows: a step's {} rows a GPU hold {:.1f} examples and {:.0f} real tokens; on {}:\n{}",
                               per_gpu, static_cast<double>(per_gpu) * packed->examples, report.real_tokens_per_step(),
                               c.compile.arch.text(), rows_text(report));
    const std::string memory = memory_warning(report);
    if (!memory.empty()) notes.insert(fmt::format("warning: {}: {}", gpu.name, memory));
    // (ZeRO is pretraining's: fine-tuning's ranks each keep the whole optimizer state)
    const int shards = c.finetune_section ? 1 : a.gpus_per_machine * a.machines;
    const int64_t sharded = report.device_bytes_with_zero1(shards);
    notes.insert(zero1_memory_line(report, shards));
    const auto price = passes::cloud_price(gpu.name);
    setup.compute_seconds = report.step_seconds;
    setup.micro_batches = c.train.gradient_accumulation_steps;
    setup.dollars_per_gpu_hour = a.price >= 0 ? a.price : price ? price->dollars_per_hour : 0;
    const bool priced = a.price >= 0 || price.has_value();  // (--price 0: hardware of one's own, a cost of $0)
    for (distributed::Compression kind : kinds) {
      setup.bytes_per_step = static_cast<double>(bytes_per_step(program.step, c.train, kind, setup.gpus_per_machine * setup.machines));
      setup.latency_hops = latency_hops(program.step, c.train, kind, setup.gpus_per_machine * setup.machines);
      if (kind == distributed::Compression::PowerSgd) {
        distributed::ExchangeOptions o = train::exchange_options(c.train);
        o.compression = kind;
        if (distributed::powersgd_split(train::gradient_tensors(program.step), o).compressed.empty())
          notes.insert(fmt::format("note: powersgd_rank = {} compresses no gradient of this model: its powersgd rows "
                                   "send fp32's bytes, and training refuses it (lower powersgd_rank)",
                                   c.train.powersgd_rank));
      }
      const passes::ScalingEstimate e = passes::estimate_scaling(setup);
      rows.push_back({{"gpu", gpu.name}, {"precision", ir::enum_name(c.compile.precision)}, {"compression", ir::enum_name(kind)},
                      {"bytes_per_step", setup.bytes_per_step}, {"compute_seconds", setup.compute_seconds},
                      {"micro_batches", setup.micro_batches},
                      {"allreduce_seconds", e.allreduce_seconds}, {"latency_seconds", e.latency_seconds},
                      {"step_seconds", e.step_seconds},
                      {"overlapped_step_seconds", e.overlapped_step_seconds}, {"days", e.days},
                      {"bertc_step_seconds", train::sums_overlap_backward(kind, c.finetune_section) ? e.overlapped_step_seconds : e.step_seconds},
                      {"overlapped_days", e.overlapped_days}, {"link_gbs", e.link_gbs}, {"gpus", e.gpus},
                      {"dollars_per_gpu_hour", priced ? nlohmann::json(setup.dollars_per_gpu_hour) : nlohmann::json(nullptr)},
                      {"device_bytes", report.device_bytes()}, {"device_bytes_zero1", sharded},
                      {"flops_per_step", report.flops_per_step},
                      {"real_token_flops_per_step", packed->measured() ? nlohmann::json(report.real_token_flops)
                                                                      : nlohmann::json(nullptr)},
                      {"real_tokens_per_step", packed->measured() ? nlohmann::json(report.real_tokens_per_step())
                                                                  : nlohmann::json(nullptr)},
                      {"real_token_flops_ratio", packed->measured() ? nlohmann::json(report.real_token_flops_ratio())
                                                                    : nlohmann::json(nullptr)}, {"fits_device_memory", memory.empty()},
                      // (null without a price, as the table's "-": not a cost of 0, nor a price of 0)
                      {"cost_dollars", priced ? nlohmann::json(e.cost) : nlohmann::json(nullptr)}});
      // (bertc's column marked: its sums in the backward, or after it)
      const bool overlaps = train::sums_overlap_backward(kind, c.finetune_section);
      if (c.finetune_section && setup.gpus_per_machine * setup.machines > 1)
        notes.insert("note: fine-tuning sums its gradients after each step, staged through host memory (bertc "
                     "finetune): its * is the sequential step, whatever the compression; a GPU's gradients copied "
                     "over PCIe each step are not counted");
      else if (!overlaps)
        notes.insert(fmt::format("note: the {} row counts the link alone: its compression runs on the host, a GPU's "
                                 "gradients{} copied over PCIe each step, and neither is counted (measured on CPU ranks: "
                                 "docs/distributed.md, \"A slow link, measured\")",
                                 ir::enum_name(kind), kind == distributed::Compression::OneBit ? " and momentum" : ""));
      if (kind == distributed::Compression::OneBit)
        notes.insert(fmt::format("note: the onebit row prices every step compressed; its first onebit_warmup_steps "
                                 "({}) send fp32's bytes, as the none row",
                                 c.train.onebit_warmup_steps));
      auto cell = [](double seconds, bool bertcs) { return fmt::format("{:.0f}ms{}", seconds * 1e3, bertcs ? "*" : " "); };
      text += fmt::format("{:<10} {:<10} {:>10.1f} {:>8.0f}ms {:>9.0f}ms {:>10} {:>12} {:>8.2f} {:>10.2f} {:>9}\n",
                          fmt::format("{} {}", gpu.name, ir::enum_name(c.compile.precision)), ir::enum_name(kind),
                          setup.bytes_per_step / (1 << 20), setup.compute_seconds * 1e3, e.allreduce_seconds * 1e3,
                          cell(e.step_seconds, !overlaps), cell(e.overlapped_step_seconds, overlaps), e.days, e.overlapped_days,
                          priced ? money(e.cost) : "-");
    }
  }
  text += "compute: the compile report's roofline for one GPU's step; all-reduce: a ring, 2 (N-1)/N x the bytes over the "
          "slowest link at line rate, and a hop of its latency for each ring step of the step's collectives (2 (N-1) "
          "a bucket's sum); step: the all-reduce after the compute; overlapped: "
          "the all-reduce hidden behind the last micro-batch's backward (2/3 of its compute), as far as it reaches; * marks "
          "bertc's: on a GPU its none, fp16 and bf16 sums are NCCL's, started in that backward bucket by bucket, and "
          "PowerSGD's and 1-bit's are made on the host after it; cost at the price per GPU-hour (--price, or the cloud "
          "offers of passes/scaling_estimate.cpp), for the sequential step\n";
  text += flops_note;
  for (const std::string& note : notes) text += note + "\n";
  if (a.json) out << rows.dump(1) << "\n";
  else out << text;
  return 0;
}

}  // namespace bertc::driver
