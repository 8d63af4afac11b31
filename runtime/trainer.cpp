// The training loop, on the reference executor or a device (see trainer.h).
#include "runtime/trainer.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/philox.h"
#include "passes/cost_model.h"
#include "passes/memory_plan.h"
#include "passes/pipeline.h"
#include "runtime/autotune.h"
#include "runtime/batch_loader.h"
#include "runtime/batches.h"
#include "runtime/checkpoint.h"
#include "runtime/data/pretraining_data.h"
#include "runtime/graph_runner.h"
#include "runtime/host_device.h"
#include "runtime/initialize.h"
#include "runtime/lr_schedule.h"
#include "runtime/micro_batch.h"
#include "runtime/open_device.h"
#include "runtime/step_figures.h"
#include "runtime/reference/executor.h"

namespace bertc::runtime {
namespace {

using Clock = std::chrono::steady_clock;

class TrainError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A fresh dropout seed per micro-batch, a function of the run's seed only: a resumed run draws
// the same masks as an uninterrupted one.
int64_t dropout_seed(uint64_t seed, int64_t micro_batch) {
  const auto m = static_cast<uint64_t>(micro_batch);
  const auto r = ir::philox4x32_10({static_cast<uint32_t>(m), static_cast<uint32_t>(m >> 32), 0xd207u, 0},
                                   {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
  return static_cast<int64_t>((static_cast<uint64_t>(r[0]) << 32 | r[1]) >> 1);
}

// Correct and counted masked-LM predictions (argmax over the vocabulary at real positions).
std::pair<int64_t, int64_t> mlm_hits(const HostTensor& logits, const data::Batch& b) {
  const int64_t vocab = logits.type.shape[1];
  int64_t correct = 0, counted = 0;
  for (size_t r = 0; r < b.masked_lm_weights.size(); ++r) {
    if (b.masked_lm_weights[r] == 0) continue;
    const float* row = logits.real.data() + r * vocab;
    correct += std::max_element(row, row + vocab) - row == b.masked_lm_ids[r];
    ++counted;
  }
  return {correct, counted};
}

struct StepStats {
  int64_t step = 0;
  double loss = 0, mlm_loss = 0, nsp_loss = 0, learning_rate = 0, grad_norm = 0;
  int64_t mlm_correct = 0, mlm_counted = 0, tokens = 0;
  double seconds = 0;
  bool skipped = false;    // loss scaling found an overflow: no update
  double loss_scale = 0;   // 0 without loss scaling
};

// What the progress line says of the device: model FLOPs utilization and memory.
struct DeviceFigures {
  double model_flops_per_step = 0;  // forward and backward of every micro-batch, no recompute
  double peak_flops = 0;            // the GPU's datasheet peak at the precision (0: no MFU)
  uint64_t memory_bytes = 0;        // device memory allocated (0: the reference executor)
};

// The live progress line (or periodic lines) and the JSON-lines metrics file.
class Progress {
 public:
  Progress(std::ostream& log, const std::filesystem::path& metrics, int64_t first, int64_t last, int64_t every, bool live,
           DeviceFigures device)
      : log_(log), metrics_(metrics, std::ios::app), first_(first), last_(last), every_(every), live_(live),
        device_(device) {
    if (!metrics_) throw TrainError(fmt::format("{}: cannot open the metrics file for appending", metrics.string()));
  }

  void record(const StepStats& s) {
    total_seconds_ += s.seconds;
    total_tokens_ += s.tokens;
    skipped_ += s.skipped;
    window_.add(s);
    const double accuracy = s.mlm_counted ? double(s.mlm_correct) / double(s.mlm_counted) : 0.0;
    const double tokens_per_s = total_seconds_ > 0 ? double(total_tokens_) / total_seconds_ : 0.0;
    // Over the whole call, as tokens/s: the first step's graph recording and compiles included.
    ++steps_;
    const double mfu = device_.peak_flops > 0 && total_seconds_ > 0
                           ? device_.model_flops_per_step * double(steps_) / total_seconds_ / device_.peak_flops
                           : 0.0;
    nlohmann::json json{{"step", s.step},           {"loss", s.loss},
                        {"mlm_loss", s.mlm_loss},   {"nsp_loss", s.nsp_loss},
                        {"learning_rate", s.learning_rate},
                        {"grad_norm", s.grad_norm}, {"tokens_per_second", tokens_per_s},
                        {"step_seconds", s.seconds}, {"step_skipped", s.skipped},
                        {"loss_scale", s.loss_scale}};
    if (s.mlm_counted > 0) json["mlm_accuracy"] = accuracy;
    if (device_.peak_flops > 0) json["mfu"] = mfu;
    if (device_.memory_bytes > 0) json["device_memory_bytes"] = device_.memory_bytes;
    metrics_ << json.dump() << "\n" << std::flush;
    const bool print = live_ || s.step == first_ || s.step == last_ || s.step % every_ == 0;
    if (!print) return;
    // Mean over the steps since the last printed line: one step of a small batch is noisy.
    const double eta = total_seconds_ / double(s.step - first_ + 1) * double(last_ - s.step);
    const Window& w = window_;
    std::string line = fmt::format(
        "step {}/{}  loss {:.4f} (mlm {:.4f}, nsp {:.4f})  mlm acc {:.1f}%  lr {:.2e}  |g| {:.3f}  {:.0f} tok/s  ETA {}",
        s.step, last_, w.loss / w.steps, w.mlm / w.steps, w.nsp / w.steps,
        w.counted ? 100.0 * double(w.correct) / double(w.counted) : 0.0, s.learning_rate, w.grad_norm / w.steps,
        tokens_per_s, duration(eta));
    if (s.loss_scale > 0) line += fmt::format("  scale {:g}, {} skipped", s.loss_scale, skipped_);
    if (device_.peak_flops > 0) line += fmt::format("  MFU {:.1f}%", 100 * mfu);
    if (device_.memory_bytes > 0) line += "  mem " + memory(device_.memory_bytes);
    if (live_) log_ << "\r\033[K" << line << (s.step == last_ ? "\n" : "") << std::flush;
    else log_ << line << "\n" << std::flush;
    if (!live_ || s.step % every_ == 0) window_ = {};
  }

  void note(const std::string& message) {  // a message between progress lines
    log_ << (live_ ? "\r\033[K" : "") << message << "\n" << std::flush;
  }

 private:
  static std::string memory(uint64_t bytes) {
    const double mib = static_cast<double>(bytes) / (1 << 20);
    return mib >= 1024 ? fmt::format("{:.2f} GiB", mib / 1024) : fmt::format("{:.1f} MiB", mib);
  }

  static std::string duration(double seconds) {
    const auto s = static_cast<int64_t>(seconds + 0.5);
    return s >= 3600 ? fmt::format("{}h{:02d}m", s / 3600, s % 3600 / 60) : fmt::format("{}m{:02d}s", s / 60, s % 60);
  }

  struct Window {  // sums since the last printed line
    double loss = 0, mlm = 0, nsp = 0, grad_norm = 0;
    int64_t steps = 0, correct = 0, counted = 0;
    void add(const StepStats& s) {
      loss += s.loss, mlm += s.mlm_loss, nsp += s.nsp_loss, grad_norm += s.grad_norm;
      ++steps, correct += s.mlm_correct, counted += s.mlm_counted;
    }
  };

  std::ostream& log_;
  std::ofstream metrics_;
  Window window_;
  int64_t first_, last_, every_;
  bool live_;
  DeviceFigures device_;
  int64_t steps_ = 0;
  double total_seconds_ = 0;
  int64_t total_tokens_ = 0, skipped_ = 0;
};

// Params and optimizer moments: what a checkpoint holds (accumulators are zero between steps).
TensorManifest manifest_of(const passes::TrainingProgram& p) {
  TensorManifest m;
  for (ir::ValueId v : p.step.values_of(ir::OpKind::Param)) m[p.step.value(v).name] = p.step.value(v).type;
  for (ir::ValueId v : p.optimizer.values_of(ir::OpKind::State))
    if (!p.optimizer.value(v).name.ends_with(".grad_acc")) m[p.optimizer.value(v).name] = p.optimizer.value(v).type;
  return m;
}

// The run facts a resumed run must share with its checkpoint to continue the same data stream.
std::map<std::string, std::string> run_metadata(const frontend::ModelDefinition& model, const frontend::Config& c) {
  const frontend::TrainConfig& t = c.train;
  return {{"model", model.name},
          {"config", c.name},
          {"optimizer", t.optimizer},
          {"seed", std::to_string(t.seed)},
          {"batch_size", std::to_string(t.batch_size)},
          {"seq_len", std::to_string(t.seq_len)},
          {"max_predictions_per_seq", std::to_string(t.max_predictions_per_seq)},
          {"gradient_accumulation_steps", std::to_string(t.gradient_accumulation_steps)}};
}

// Fills env with params and states; returns the step training continues after.
int64_t prepare_state(const frontend::ModelDefinition& model, const TrainOptions& o,
                      const passes::TrainingProgram& program, Environment& env, std::ostream& log) {
  const auto existing = list_checkpoints(o.checkpoint_dir);
  int64_t start = 0;
  if (o.resume) {
    if (existing.empty())
      throw TrainError(fmt::format("--resume: no checkpoint in {} (run without --resume to start fresh)",
                                   o.checkpoint_dir.string()));
    const CheckpointContents c = load_checkpoint(existing.back().path, manifest_of(program), env);
    for (const auto& [key, value] : run_metadata(model, o.config)) {
      auto it = c.metadata.find(key);
      if (it != c.metadata.end() && it->second != value)
        throw TrainError(fmt::format("{}: trained with {} = {}, but this run has {}: resume with the same settings, "
                                     "or start a fresh run in another --checkpoint-dir",
                                     existing.back().path.string(), key, it->second, value));
    }
    start = c.step;
    log << fmt::format("resuming from {} (step {})\n", existing.back().path.string(), start);
  } else {
    if (!existing.empty())
      throw TrainError(fmt::format("{} already holds checkpoints (newest: step {}): pass --resume to continue that run, "
                                   "or choose another --checkpoint-dir",
                                   o.checkpoint_dir.string(), existing.back().step));
    if (o.init) {
      const PretrainedReport r = load_pretrained(*o.init, program.step, env);
      log << fmt::format("init: {} params from {}\n", r.loaded.size(), o.init->string());
      if (!r.missing.empty())
        log << fmt::format("init: {} params not in the file, initialized fresh: {}\n", r.missing.size(),
                           fmt::join(r.missing, ", "));
      if (!r.unexpected.empty())
        log << fmt::format("init: {} tensors of the file are not params of this model, ignored: {}\n",
                           r.unexpected.size(), fmt::join(r.unexpected, ", "));
    }
  }
  const frontend::ModelConfig& m = o.config.model;
  initialize_parameters(program.step, m.initializer_range, m.pad_token_id, static_cast<uint64_t>(o.config.train.seed), env);
  initialize_states(program.step, env);
  initialize_states(program.optimizer, env);
  return start;
}

// "compile: precision fp32, recompute none, 271 kernels (fusion on, fused attention on), planned
// activations 150.2 MiB" : what the user's options became.
std::string compile_summary(const frontend::CompileOptions& c, const passes::TrainingProgram& p) {
  int64_t launches = 0;
  for (const ir::Graph* g : {&p.step, &p.optimizer})
    for (const ir::Op& op : g->ops()) launches += passes::launch_cost(*g, op, std::nullopt, c.precision).launch;
  return fmt::format("compile: precision {}, recompute {}, {} kernels per micro-batch and optimizer step (fusion {}, "
                     "fused attention {}), planned activations {:.1f} MiB",
                     c.precision, p.recompute, launches, c.fusion ? "on" : "off", c.fused_attention ? "on" : "off",
                     static_cast<double>(passes::plan_memory(p.step).arena_bytes) / (1 << 20));
}

// The device the compiled plan runs on (null for the reference executor) and its arch.
OpenedDevice open_training_device(const TrainOptions& o, std::ostream& log) {
  if (o.device == "cpu") return {};
  OpenedDevice opened = open_device(o.device, o.host_sm, o.kernel_cache);
  if (o.device == "cuda")
    log << fmt::format("device: {} (the CUDA runtime has not been validated on a GPU yet)\n", opened.device->name());
  return opened;
}

}  // namespace

TrainSummary train_model(const frontend::ModelDefinition& model, const TrainOptions& options, std::ostream& log) {
  TrainOptions o = options;
  // The device first: a missing GPU is cheaper to find than the program is to compile.
  const auto [device, sm] = open_training_device(o, log);
  if (o.auto_batch) {
    const uint64_t available = o.device_memory ? *o.device_memory : (device ? device->free_bytes() : host_available_bytes());
    const MicroBatch b = choose_micro_batch(model, o.config, available, log);
    o.config.train.batch_size = b.batch_size;
    o.config.train.gradient_accumulation_steps = b.accumulation;
    log << fmt::format("train: micro-batch {} x {} accumulation steps (global batch {}), planned {:.1f} MiB of device "
                       "memory\n",
                       b.batch_size, b.accumulation, b.batch_size * b.accumulation,
                       static_cast<double>(b.bytes) / (1 << 20));
  }
  const frontend::TrainConfig& t = o.config.train;
  const passes::TrainingProgram program = passes::compile_training(frontend::build_model(model, o.config),
                                                                   o.config.compile, passes::optimizer_options(t));
  log << compile_summary(o.config.compile, program) << "\n";
  // Checkpoint problems first: they are cheaper to find than the data is to load.
  Environment env;
  const int64_t start = prepare_state(model, o, program, env, log);
  TrainSummary summary;
  const int64_t last = std::min(o.stop_after, t.steps);
  if (start >= last) {
    log << fmt::format("already at step {} of {}: nothing to do (raise --steps to train on)\n", start, last);
    return summary;
  }
  const bool has_logits = program.step.find("mlm_logits").has_value();
  const bool scaling = program.optimizer.find("step_skipped").has_value();
  std::vector<std::string> opt_fetch = {"grad_norm"};
  if (scaling) opt_fetch.insert(opt_fetch.end(), {"step_skipped", "loss_scale_used"});
  std::vector<std::string> fetch = {"mlm_loss", "nsp_loss"};
  if (has_logits) fetch.push_back("mlm_logits");
  std::unique_ptr<GraphRunner> step_exec, opt_exec;
  DeviceFigures figures;
  if (device) {
    codegen::RenderTarget target{sm, o.config.compile.matmul};
    if (o.autotune) {
      // On a device of its own, whose buffers go with it once the choices are made.
      std::ostringstream quiet;
      const std::shared_ptr<Device> tuning = open_training_device(o, quiet).device;
      target.tuned = autotune_products({&program.step, &program.optimizer}, target, *tuning,
                                       o.kernel_cache / "autotune.json", o.device == "cuda" ? 20 : 1, log);
    }
    // Params, moments and accumulators stay on the device; checkpoints download them.
    const auto state = std::make_shared<ResidentState>(*device);
    const Launching launching = o.eager ? Launching::Eager : Launching::Graph;
    step_exec = plan_runner(program.step, fetch, target, device, state, launching);
    opt_exec = plan_runner(program.optimizer, opt_fetch, target, device, state, launching);
    figures.memory_bytes = device->allocated_bytes();
    if (o.device == "cuda") {
      figures.peak_flops = peak_flops(sm, o.config.compile.precision);
      figures.model_flops_per_step = model_flops_per_step(model, o.config, program);
    }
  } else {
    step_exec = reference_runner(program.step, fetch);
    opt_exec = reference_runner(program.optimizer, opt_fetch);
  }
  const data::BatchStream stream = open_batch_stream(o.config, o.data, o.vocab, log);
  std::filesystem::create_directories(o.checkpoint_dir);
  const int64_t K = t.gradient_accumulation_steps;
  // The loader thread makes the next micro-batches while the current one trains.
  BatchLoader loader(
      [&](int64_t micro) {
        LoadedBatch b{micro, stream.batch(micro), {}};
        bind_batch(b.batch, b.inputs);
        return b;
      },
      start * K, last * K);
  Progress progress(log, o.metrics, start + 1, last, t.log_every, o.live_progress, figures);
  summary.first_step = start + 1;
  for (int64_t s = start + 1; s <= last; ++s) {
    const auto began = Clock::now();
    StepStats stats;
    stats.step = s;
    stats.learning_rate = learning_rate_at(t, s);
    env["learning_rate"] = HostTensor::scalar(ir::DType::F32, stats.learning_rate);
    std::optional<reference::RunResult<float>> optimized;  // the optimizer step's results
    for (int64_t k = 0; k < K; ++k) {
      const int64_t micro = (s - 1) * K + k;
      LoadedBatch loaded = loader.next();
      if (loaded.micro_batch != micro) throw std::logic_error("the batch loader is out of step with training");
      const data::Batch& batch = loaded.batch;
      for (auto& [name, tensor] : loaded.inputs) env[name] = std::move(tensor);
      HostTensor seed = HostTensor::zeros({ir::DType::I64, {}});  // 63-bit: no trip through double
      seed.integer[0] = dropout_seed(static_cast<uint64_t>(t.seed), micro);
      env["dropout_seed"] = std::move(seed);
      // On a GPU the MLM logits (batch x predictions x vocabulary) come back only on the steps that
      // print a window's accuracy: copying them and their argmax on the host every step would
      // cost the GPU a noticeable share of a step.
      const bool sample = o.device != "cuda" || s % t.log_every == 0 || s == start + 1 || s == last;
      const std::set<std::string> leave = sample ? std::set<std::string>{} : std::set<std::string>{"mlm_logits"};
      reference::RunResult<float> r;
      if (K == 1) {
        // Nothing accumulates: on a device the step and the optimizer step replay as one graph.
        auto both = run_together(*step_exec, *opt_exec, env, leave);
        r = std::move(both.first);
        optimized = std::move(both.second);
      } else {
        r = step_exec->run(env, leave);
      }
      stats.loss += r.outputs.at(0).real.at(0) / double(K);
      stats.mlm_loss += r.fetched.at("mlm_loss").real.at(0) / double(K);
      stats.nsp_loss += r.fetched.at("nsp_loss").real.at(0) / double(K);
      if (has_logits && sample) {
        const auto [correct, counted] = mlm_hits(r.fetched.at("mlm_logits"), batch);
        stats.mlm_correct += correct;
        stats.mlm_counted += counted;
      }
      for (int64_t m : batch.attention_mask) stats.tokens += m;
    }
    // (With one micro-batch the optimizer step has run already; the state it left is never saved.)
    if (!std::isfinite(stats.loss))
      throw TrainError(fmt::format("the loss is {} at step {}: lower [train] learning_rate or raise warmup_steps, and "
                                   "--resume from the last checkpoint", stats.loss, s));
    if (!optimized) optimized = opt_exec->run(env);
    const reference::RunResult<float>& r = *optimized;
    stats.grad_norm = r.fetched.at("grad_norm").real.at(0);
    if (scaling) {
      stats.skipped = r.fetched.at("step_skipped").real.at(0) != 0;
      stats.loss_scale = r.fetched.at("loss_scale_used").real.at(0);
    }
    stats.seconds = std::chrono::duration<double>(Clock::now() - began).count();
    progress.record(stats);
    summary.losses.push_back(stats.loss);
    if ((t.checkpoint_every > 0 && s % t.checkpoint_every == 0) || s == last) {
      opt_exec->download_state(env);
      save_checkpoint(o.checkpoint_dir, s, manifest_of(program), env, run_metadata(model, o.config), t.keep_checkpoints);
      if (s == last || !o.live_progress) progress.note(fmt::format("checkpoint: {}", checkpoint_path(o.checkpoint_dir, s).string()));
    }
  }
  summary.last_step = last;
  const size_t n = std::min<size_t>(static_cast<size_t>(t.log_every), summary.losses.size());
  summary.first_loss = std::accumulate(summary.losses.begin(), summary.losses.begin() + n, 0.0) / double(n);
  summary.last_loss = std::accumulate(summary.losses.end() - n, summary.losses.end(), 0.0) / double(n);
  return summary;
}

}  // namespace bertc::runtime
