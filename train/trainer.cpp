// The training loop, on the reference executor or a device (see trainer.h).
#include "train/trainer.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <exception>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "codegen/matrix_strategy.h"
#include "data/pretraining_data.h"
#include "data/stop_check.h"
#include "data/vocab_identity.h"
#include "ir/philox.h"
#include "ir/printer.h"
#include "ir/value_names.h"
#include "passes/cost_model.h"
#include "passes/memory_plan.h"
#include "passes/pipeline.h"
#include "devices/device_registry.h"
#include "runtime/device_target.h"
#include "runtime/emulator_controls.h"
#include "runtime/host_device.h"
#include "support/atomic_file.h"
#include "support/safetensors.h"
#include "support/shell_word.h"
#include "train/autotune.h"
#include "train/batch_loader.h"
#include "train/batches.h"
#include "run_folder/checkpoint.h"
#include "train/data_parallel.h"
#include "train/graph_runner.h"
#include "train/lr_schedule.h"
#include "train/micro_batch.h"
#include "train/profile.h"
#include "run_folder/progress.h"
#include "run_folder/records.h"
#include "run_folder/resume.h"
#include "run_folder/run_lock.h"
#include "run_folder/stop_request.h"
#include "train/step_figures.h"

namespace bertc::train {
namespace {

// The stop a failed metrics write asks (past every signal's number, and the largest, so that
// ranks agreeing on the largest stop all take it).
constexpr int kStopForMetrics = 1 << 16;

using Clock = std::chrono::steady_clock;
namespace names = ir::names;

// Correct and counted masked-LM predictions (argmax over the vocabulary at real positions).
std::pair<int64_t, int64_t> mlm_hits(const support::HostTensor& logits, const data::Batch& b) {
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

// "compile: precision fp32, recompute none, 271 kernels (fusion on, fused attention on), planned
// activations 150.2 MiB" : what the user's options became.
std::string compile_summary(const passes::CompileOptions& c, const passes::TrainingProgram& p) {
  int64_t launches = 0;
  for (const ir::Graph* g : {&p.step, &p.optimizer})
    for (const ir::Op& op : g->ops()) launches += ir::launches_kernel(op.kind);
  return fmt::format("compile: precision {}, recompute {}, {} kernels per micro-batch and optimizer step (fusion {}, "
                     "fused attention {}{}), planned activations {:.1f} MiB",
                     ir::enum_name(c.precision), p.recompute.policy, launches, c.fusion ? "on" : "off",
                     c.fused_attention ? "on" : "off",
                     c.dropout ? "" : "; dropout off: no dropout ops, whatever [model] sets, as in evaluation",
                     static_cast<double>(passes::plan_memory(p.step).arena_bytes) / (1 << 20));
}

// The device the compiled plan runs on; null for the reference executor.
std::shared_ptr<runtime::Device> open_training_device(const TrainOptions& o) {
  if (!o.device) return nullptr;
  runtime::DeviceRequest r{o.config.compile.arch.sm(), o.kernel_cache, o.world ? o.world->local_rank() : 0};
  if (o.compiled) {  // (no reference to fall back to: its program is kernels)
    r.instead = "train it where a GPU of its arch is, or with --device host (the emulation: slow, for checking)";
    r.older_gpu = "compile it for this GPU (bertc compile CONFIG --arch sm_{} -o FILE.bertx)";
  } else {
    r.instead = "train with --device cpu (the reference) or --device host (the emulation), or where a GPU is";
    r.older_gpu = "train with --arch auto (or --arch sm_{})";
  }
  return devices::open_device(*o.device, r);
}

// The kernels --batch-size auto plans for: the device's (on a device without cuBLAS no product
// runs there). The reference runs no kernels and no cuBLAS: its plan is generated kernels for the
// host emulation's arch. --autotune may move any product to cuBLAS after the plan is made, so it
// plans for the most cuBLAS can take.
codegen::RenderTarget planning_target(const TrainOptions& o, const runtime::Device* device) {
  if (!device) return {0, passes::MatmulPolicy::Generated, {}, false};
  const runtime::DeviceCapabilities caps = device->capabilities();
  codegen::RenderTarget target = runtime::device_render_target(o.config.compile, caps, nullptr);
  if (o.autotune && caps.no_library.empty()) target.matmul = passes::MatmulPolicy::Library;
  return target;
}

// The micro-batch the newest checkpoint of --resume's folder was trained with, when it divides
// this run's batch per rank (said on `log`), else 0. Throws TrainError for a folder without one:
// a search of micro-batches first would take minutes before saying so.
uint64_t resumed_micro_batch(const TrainOptions& o, int ranks, std::ostream& log) {
  const std::vector<run_folder::CheckpointFile> existing = run_folder::resumable_checkpoints(o.checkpoint_dir);
  std::map<std::string, std::string> saved;
  try {
    saved = support::read_safetensors_metadata(existing.back().path);
  } catch (const std::exception&) {  // (an unreadable checkpoint is said by the resume itself)
    return 0;
  }
  run_folder::check_run_metadata(saved, existing.back().path);
  const auto batch = saved.find("batch_size"), world = saved.find("world_size");
  const int64_t per_rank = o.config.train.batch_size * o.config.train.gradient_accumulation_steps;
  if (batch == saved.end() || (world != saved.end() && world->second != std::to_string(ranks))) return 0;
  // (another global batch is refused now, before a split is said or searched for)
  run_folder::refuse_other_global_batch(saved, std::to_string(per_rank * ranks), existing.back().path);
  const int64_t b = std::atoll(batch->second.c_str());
  if (b <= 0 || per_rank % b != 0) return 0;
  log << fmt::format("train: --batch-size auto on resume: micro-batch {} x {} accumulation steps, as {} was trained\n",
                     b, per_rank / b, existing.back().path.filename().string());
  return static_cast<uint64_t>(b);
}

// --batch-size auto: the micro-batch and accumulation that fit the device (of every rank: the
// one with the least memory decides).
void choose_batch(const frontend::ModelDefinition& model, TrainOptions& o, const runtime::Device* device,
                  distributed::Communicator& comm, std::ostream& log) {
  // A resumed run keeps the split its checkpoint was trained with (the micro-batch sets which
  // examples share a dropout draw: another split goes on differently from an uninterrupted run):
  // chosen again from the checkpoint, not from the memory free now, which differs from run to run.
  if (o.resume) {
    // (rank 0 reads the run folder, as the resume itself does; the others take its choice)
    uint64_t saved = 0;
    if (comm.rank() == 0) saved = resumed_micro_batch(o, comm.size(), log);
    const uint64_t b = comm.all_gather(saved, "the start-up exchange of the resumed micro-batch (--batch-size auto)")[0];
    if (b > 0) {
      const int64_t per_rank = o.config.train.batch_size * o.config.train.gradient_accumulation_steps;
      o.config.train.batch_size = static_cast<int64_t>(b);
      o.config.train.gradient_accumulation_steps = per_rank / static_cast<int64_t>(b);
      return;
    }
  }
  uint64_t mine = o.device_memory ? *o.device_memory : (device ? device->free_bytes() : runtime::host_available_bytes());
  // A collective library (NCCL on a GPU) allocates its buffers when it joins, after the
  // micro-batch is chosen (and so do the buffers of 16-bit shares it sums with fp16 / bf16
  // compression: 2 bytes a param).
  const runtime::DeviceCapabilities can = device ? device->capabilities() : runtime::DeviceCapabilities{};
  int64_t params = 0;
  if (collective_reserve_bytes(o.config.train, comm.size(), can, 0) > 0) {
    const ir::Graph forward = frontend::build_model(model, o.config.model_settings());
    for (ir::ValueId p : forward.values_of(ir::OpKind::Param)) params += forward.value(p).type.numel();
  }
  const uint64_t reserve = collective_reserve_bytes(o.config.train, comm.size(), can, params);
  if (reserve > 0) {
    log << fmt::format("train: --batch-size auto leaves {} MiB for the gradient sums' library ({})\n", reserve >> 20,
                       device->name());
    mine = mine > reserve ? mine - reserve : 0;
  }
  const std::vector<uint64_t> all = comm.all_gather(mine, "the start-up exchange of free memory (--batch-size auto)");
  const uint64_t available = *std::min_element(all.begin(), all.end());
  const codegen::RenderTarget target = planning_target(o, device);  // (its errors are not of memory)
  const MicroBatch b = [&] {
    try {
      return choose_micro_batch(model, o.config, target, available, log);
    } catch (const std::runtime_error& e) {
      if (!o.device_memory) throw;
      throw run_folder::TrainError(fmt::format("{} (or, if the device has more than the --device-memory {} given, raise it)",
                                   e.what(), *o.device_memory));
    }
  }();
  o.config.train.batch_size = b.batch_size;
  o.config.train.gradient_accumulation_steps = b.accumulation;
  log << fmt::format("train: micro-batch {} x {} accumulation steps (global batch {}), planned {:.1f} MiB of device "
                     "memory\n",
                     b.batch_size, b.accumulation, b.batch_size * b.accumulation * comm.size(),
                     static_cast<double>(b.bytes) / (1 << 20));
}

// A metadata count of a checkpoint, or `otherwise` when it has none (check_run_metadata has
// checked its form).
int64_t metadata_number(const std::map<std::string, std::string>& meta, const std::string& key, int64_t otherwise) {
  const auto it = meta.find(key);
  return it == meta.end() ? otherwise : std::stoll(it->second);
}

// --resume on another number of ranks keeps the checkpoint's global batch by changing the
// accumulation steps (rank 0 reads the checkpoint; every rank gets its figures).
void keep_global_batch(TrainOptions& o, distributed::Communicator& comm, std::ostream& log) {
  if (!o.resume) return;
  int64_t saved[2] = {0, 0};  // ranks and global batch of the newest checkpoint (0: none; -1: rank 0 refused it)
  std::exception_ptr refused;
  if (comm.rank() == 0) {
    const auto existing = run_folder::list_checkpoints(o.checkpoint_dir);
    if (!existing.empty()) {
      try {
        const auto meta = support::read_safetensors_metadata(existing.back().path);
        run_folder::check_run_metadata(meta, existing.back().path);
        saved[0] = metadata_number(meta, "world_size", 1);
        saved[1] = metadata_number(meta, "global_batch", metadata_number(meta, "batch_size", 0) *
                                                             metadata_number(meta, "gradient_accumulation_steps", 1));
      } catch (const support::SafetensorsError&) {
        // (A newest file that does not read: loading it says what it is and the way on.)
      } catch (const run_folder::TrainError&) {  // (said after the broadcast: the other ranks would wait for it until their timeout)
        refused = std::current_exception();
        saved[0] = -1;
      }
    }
  }
  comm.broadcast(saved, sizeof saved, 0);
  if (refused) std::rethrow_exception(refused);
  if (saved[0] == -1)
    throw run_folder::TrainError("rank 0 refused the newest checkpoint's record (its error says why): this rank stops with it");
  run_config::TrainConfig& t = o.config.train;
  const int64_t ranks = comm.size();
  if (saved[1] == 0 || saved[0] == ranks || ranks * t.batch_size * t.gradient_accumulation_steps == saved[1]) return;
  if (o.compiled)  // its optimizer step averages the compiled number of micro-batches
    throw run_folder::TrainError(fmt::format("the checkpoint trained on {} rank(s) with a global batch of {}, and this compiled "
                                 "program's optimizer step averages {} micro-batches of {}: resume from the config "
                                 "(bertc train CONFIG --resume), which compiles the accumulation that keeps it",
                                 saved[0], saved[1], t.gradient_accumulation_steps, t.batch_size));
  if (saved[1] % ranks != 0)
    throw run_folder::TrainError(fmt::format("the checkpoint trained with a global batch of {} on {} rank(s), and {} ranks cannot "
                                 "share it equally: resume on a number of ranks that divides {}",
                                 saved[1], saved[0], ranks, saved[1]));
  // Each rank's share in micro-batches of at most the configured size: the largest that divides it.
  const int64_t share = saved[1] / ranks, configured = t.batch_size;
  while (share % t.batch_size != 0) --t.batch_size;
  t.gradient_accumulation_steps = share / t.batch_size;
  log << fmt::format("resume: the checkpoint trained on {} rank(s) with a global batch of {}; on {} rank(s) {} "
                     "accumulation step(s) of {} keep it{}\n",
                     saved[0], saved[1], ranks, t.gradient_accumulation_steps, t.batch_size,
                     t.batch_size != configured
                         ? fmt::format(" (a micro-batch of {} does not divide a rank's share of {}; the data and the "
                                       "global batch go on as before, the dropout masks, drawn per micro-batch, are "
                                       "others than an unbroken run's)",
                                       configured, share)
                         : "");
}

// How a diverged run starts again with other settings: --resume keeps the settings a run started
// with (it refuses another learning_rate), so in a new folder, fresh or from the weights of a
// checkpoint of before the loss rose (the newest may be as far gone as the run).
std::string start_again(const TrainOptions& o) {
  std::vector<std::string> kept;
  for (const auto& c : run_folder::list_checkpoints(o.checkpoint_dir)) kept.push_back(c.path.string());
  return fmt::format("{}, and train again in a new --checkpoint-dir (--resume keeps the settings the run started "
                     "with): fresh, or from a checkpoint of before the loss rose (--init CHECKPOINT{})",
                     o.compiled ? ", compile the program again with it" : "",
                     kept.empty() ? "" : fmt::format("; kept: {}", fmt::join(kept, ", ")));
}

// A loss not finite at step 1 was computed before any update: neither the learning rate nor
// warmup made it, and there is no earlier checkpoint; the starting weights did.
std::string starting_weights_advice(const TrainOptions& o) {
  if (o.init)
    return fmt::format(", before any update, from the weights of --init {}: they hold values too large or not finite "
                       "(check them), or are not this model's; start from other weights, or fresh",
                       o.init->string());
  return fmt::format(", before any update, from freshly drawn weights: [model] initializer_range = {:g} makes them "
                     "too large (BERT's is 0.02); lower it and train again",
                     o.config.model.initializer_range);
}

// What every rank must agree on once it has read its data (the settings were compared at
// start-up), said as a rank says it: the data's examples, parts and content (machines may mount
// the corpus elsewhere: what it holds is compared, not its path) and the vocabulary.
std::string data_identity(const data::BatchStream& stream, const data::Vocab& vocab) {
  return fmt::format("{} {} in {} shard(s), content xxh3 {}, vocabulary xxh3 {}", stream.examples(), stream.units(),
                     stream.shards(), stream.content(), vocab.xxh3());
}

// What training reads of its graphs besides their outputs: the step's losses (and its MLM
// logits, for the accuracy, where the graph has them); the optimizer step's gradient norm (and,
// with loss scaling, whether the step was skipped and the scale it used).
struct Fetches {
  std::vector<std::string> step, optimizer;
  bool has_logits = false, scaling = false;
};

Fetches fetches_of(const ir::Graph& step, const ir::Graph& optimizer) {
  Fetches f;
  f.has_logits = step.find(names::kMlmLogits).has_value();
  f.scaling = optimizer.find(names::kStepSkipped).has_value();
  f.step = {std::string(names::kMlmLoss), std::string(names::kNspLoss)};
  if (f.has_logits) f.step.emplace_back(names::kMlmLogits);
  f.optimizer = {std::string(names::kGradNorm)};
  if (f.scaling) f.optimizer.insert(f.optimizer.end(), {std::string(names::kStepSkipped), std::string(names::kLossScaleUsed)});
  return f;
}

// A .bertx's graphs, for the number of ranks it was compiled for (bertc compile --ranks: its
// optimizer step averages every rank's micro-batches).
passes::TrainingProgram program_of(const codegen::CompiledProgram& compiled, const distributed::Communicator& comm) {
  if (comm.size() != compiled.ranks)
    throw run_folder::TrainError(fmt::format("the compiled program is for {} data-parallel rank(s) (its optimizer step averages "
                                 "their micro-batches), and this run has {}: run it on {}, or compile it with --ranks {}",
                                 compiled.ranks, comm.size(), compiled.ranks, comm.size()));
  return codegen::graphs_of(compiled);
}

// The graphs this rank runs: `program`, or with [train] zero_stage = 1 on several ranks its step
// graph and the optimizer graph of this rank's shard of the params (passes::compile_optimizer), the
// program itself still what the ranks compare and checkpoints hold.
passes::TrainingProgram sharded_program(const passes::TrainingProgram& program, const TrainOptions& o,
                                        passes::OptimizerOptions optimizer, const distributed::Communicator& comm,
                                        std::ostream& log) {
  if (!shards_optimizer(o.config.train, comm.size())) {
    if (o.config.train.zero_stage == 1)
      log << "ZeRO: zero_stage = 1 on one rank: nothing to shard, the optimizer step is the whole model's\n";
    return program;
  }
  if (o.compiled)
    throw run_folder::TrainError("[train] zero_stage = 1 runs each rank's own optimizer graph, compiled as the run starts, "
                                 "and a compiled program holds the whole model's: train from the config (bertc train "
                                 "CONFIG), or set zero_stage = 0");
  optimizer.shard = comm.rank();
  optimizer.shards = comm.size();
  passes::TrainingProgram running = program;
  running.optimizer = passes::compile_optimizer(program.step, o.config.compile, optimizer);
  return running;
}

// What the trainer reads of its graphs, and how it runs them.
struct Runners {
  Fetches fetch;
  bool on_gpu = false;  // copying values back costs the step time
  std::unique_ptr<GraphRunner> step, optimizer;
  run_folder::DeviceFigures figures;
};

// Says each device graph a step recorded (the first replayed step records it) and what it holds:
// the kernels, copies and NCCL work replayed as one launch each step from then on.
void say_recorded_graphs(const Runners& r, run_folder::Progress* progress) {
  for (GraphRunner* runner : {r.step.get(), r.optimizer.get()})
    if (runtime::PlanExecutor* plan = runner ? runner->plan() : nullptr)
      for (const runtime::GraphCensus& census : plan->take_recorded_census())
        if (progress) progress->note(fmt::format("graph: recorded one device graph of {}; replayed from now on",
                                                 census.describe()));
}

// The plan runners of a program compiled here: kernels rendered for the device (and, with
// --autotune, the faster of generated kernels and cuBLAS per product).
void make_plan_runners(const TrainOptions& o, const passes::TrainingProgram& program,
                       const std::shared_ptr<runtime::Device>& device, const std::shared_ptr<runtime::ResidentState>& state,
                       runtime::Launching launching, std::ostream& log, Runners& r) {
  const runtime::DeviceCapabilities caps = device->capabilities();
  std::string note;
  codegen::RenderTarget target = runtime::device_render_target(o.config.compile, caps, &note);
  if (!note.empty()) log << note << "\n";
  if (o.autotune && !caps.no_library.empty()) log << "autotune: nothing to choose: no cuBLAS to time against\n";
  if (o.autotune && caps.no_library.empty()) {
    // On a device of its own, whose buffers go with it once the choices are made. Timings on an
    // emulation mean nothing: one launch of each form there checks the mechanism only.
    const std::shared_ptr<runtime::Device> tuning = open_training_device(o);
    target.tuned = autotune_products({&program.step, &program.optimizer}, target, *tuning,
                                     o.kernel_cache / "autotune.json", caps.gpu ? 20 : 1, log);
  }
  r.step = plan_runner(program.step, r.fetch.step, target, device, state, launching);
  r.optimizer = plan_runner(program.optimizer, r.fetch.optimizer, target, device, state, launching);
}

Runners make_runners(const frontend::ModelDefinition& model, const TrainOptions& o,
                     const passes::TrainingProgram& program, const std::shared_ptr<runtime::Device>& device,
                     std::ostream& log) {
  Runners r;
  r.fetch = fetches_of(program.step, program.optimizer);
  if (!device) {
    r.step = reference_runner(program.step, r.fetch.step);
    r.optimizer = reference_runner(program.optimizer, r.fetch.optimizer);
    return r;
  }
  const runtime::DeviceCapabilities caps = device->capabilities();
  r.on_gpu = caps.gpu;
  // Params, moments and accumulators stay on the device; checkpoints download them.
  const auto state = std::make_shared<runtime::ResidentState>(*device);
  const runtime::Launching launching = o.eager ? runtime::Launching::Eager : runtime::Launching::Graph;
  if (o.compiled) {  // a .bertx: its graphs (fetched values among their outputs) and kernels as compiled
    device->use_images(o.compiled->images, o.compiled->nvrtc_version);
    r.step = compiled_plan_runner(program.step, r.fetch.step, o.compiled->step, device, state, launching);
    r.optimizer = compiled_plan_runner(program.optimizer, r.fetch.optimizer, o.compiled->optimizer, device, state, launching);
  } else {
    make_plan_runners(o, program, device, state, launching, log, r);
  }
  r.figures.memory_bytes = device->allocated_bytes();
  if (caps.gpu && caps.times_measured) {  // (MFU: a GPU's time, not an emulated driver's wall clock)
    r.figures.peak_flops = peak_flops(caps.sm, o.config.compile.precision);
    r.figures.model_flops_per_step = model_flops_per_step(model, o.config, program);
  }
  return r;
}


// What a run stopped by its data can do: its checkpoints are kept, and the data a resumed run
// reads must be the same (data_content), so either the data is fixed with its examples as they
// were, or a fresh run starts from the newest checkpoint's weights.
std::string data_failed_advice(const TrainOptions& o) {
  const auto kept = run_folder::list_checkpoints(o.checkpoint_dir);
  if (kept.empty()) return "no checkpoint of this run was written yet: fix or remove that data and run again";
  return fmt::format("the checkpoints are kept (newest: step {}). A resumed run must read the same data: restore it "
                     "(the same examples) and run the same command with --resume; or leave that data out and start "
                     "a fresh run from the weights trained so far (--init {} --checkpoint-dir NEW_DIR)",
                     kept.back().step, support::shell_word(kept.back().path.string()));
}

// One optimizer step: its micro-batches, then the optimizer (with one micro-batch, both as one
// device graph). `sample` asks for the MLM accuracy.
run_folder::StepStats train_step(int64_t s, const TrainOptions& o, Runners& r, BatchLoader& loader, support::Environment& env,
                     DataParallel& dp, bool sample) {
  const run_config::TrainConfig& t = o.config.train;
  const int64_t K = t.gradient_accumulation_steps;
  run_folder::StepStats stats;
  stats.step = s;
  stats.learning_rate = learning_rate_at(t, s);
  env[std::string(names::kLearningRate)] = support::HostTensor::scalar(ir::DType::F32, stats.learning_rate);
  std::optional<reference::RunResult<float>> optimized;  // the optimizer step's results
  // Values the device need not copy back this step.
  const std::set<std::string> leave = sample ? std::set<std::string>{} : std::set<std::string>{std::string(names::kMlmLogits)};
  // Nothing accumulates: on a device the step and the optimizer step (with the gradient sums when
  // they are in its graph) replay as one graph.
  const bool together = K == 1 && (!dp.exchanges() || dp.sums_in_runs());
  std::unique_ptr<runtime::DeviceCollective::Watch> watch;  // from the graph with the sums to the optimizer's end
  for (int64_t k = 0; k < K; ++k) {
    const int64_t micro = (s - 1) * K + k;
    LoadedBatch loaded = loader.next();
    if (loaded.micro_batch != micro) throw std::logic_error("the batch loader is out of step with training");
    const data::Batch& batch = loaded.batch;
    for (auto& [name, tensor] : loaded.inputs) env[name] = std::move(tensor);
    support::HostTensor seed = support::HostTensor::zeros({ir::DType::I64, {}});  // 63-bit: no trip through double
    seed.integer[0] = dropout_seed(static_cast<uint64_t>(t.seed), dp.global_micro_batch(micro));
    env[std::string(names::kDropoutSeed)] = std::move(seed);
    reference::RunResult<float> out;
    dp.before_micro_batch(*r.step, s, k == K - 1);
    if (k == K - 1) watch = dp.watch(s);
    if (together) {
      auto both = run_together(*r.step, *r.optimizer, env, leave);
      out = std::move(both.first);
      optimized = std::move(both.second);
    } else {
      out = r.step->run(env, leave);
    }
    stats.loss += out.outputs.at(0).real.at(0) / double(K);
    stats.mlm_loss += out.fetched.at(std::string(names::kMlmLoss)).real.at(0) / double(K);
    stats.nsp_loss += out.fetched.at(std::string(names::kNspLoss)).real.at(0) / double(K);
    if (r.fetch.has_logits && sample) {
      const auto [correct, counted] = mlm_hits(out.fetched.at(std::string(names::kMlmLogits)), batch);
      stats.mlm_correct += correct;
      stats.mlm_counted += counted;
    }
    for (int64_t m : batch.attention_mask) stats.tokens += m;
  }
  dp.reduce(stats);
  // (With one micro-batch the optimizer step has run already; the state it left is never saved.)
  if (!std::isfinite(stats.loss))
    throw run_folder::Diverged(fmt::format("the loss is {} at step {}{}", stats.loss, s,
                               s == 1 ? starting_weights_advice(o) : ": lower [train] learning_rate or raise warmup_steps"));
  if (!optimized) {
    dp.before_optimizer(*r.optimizer, env, s);
    optimized = r.optimizer->run(env);
    dp.after_optimizer(*r.optimizer, *r.step, env, s);
  }
  watch.reset();
  stats.grad_norm = optimized->fetched.at(std::string(names::kGradNorm)).real.at(0);
  const distributed::ExchangeResult sent = dp.end_exchange(s, r.fetch.scaling, stats.grad_norm);
  stats.allreduce_bytes = sent.bytes;
  stats.compressed = sent.compressed;
  if (r.fetch.scaling) {
    stats.skipped = optimized->fetched.at(std::string(names::kStepSkipped)).real.at(0) != 0;
    stats.loss_scale = optimized->fetched.at(std::string(names::kLossScaleUsed)).real.at(0);
  }
  return stats;
}

// Asks both runners to time the next run's launches into the plans returned (addresses stable:
// the vector is sized here once).
std::vector<TimedPlan> profile_next_step(Runners& r) {
  std::vector<TimedPlan> timed(2);
  timed[0] = {"step", r.step->plan(), {}};
  timed[1] = {"optimizer", r.optimizer->plan(), {}};
  r.step->profile_next_run(&timed[0].times);
  r.optimizer->profile_next_run(&timed[1].times);
  return timed;
}

void write_profile(int64_t step, const TrainOptions& o, const runtime::Device& device, const std::vector<TimedPlan>& timed,
                   const passes::RowFractions& rows, std::optional<run_folder::Progress>& progress) {
  if (!progress) return;  // (rank 0 writes it)
  const Profile p = make_profile(step, device.name(), timed, o.config.compile.arch.gpu(), o.config.compile.precision, rows);
  support::write_file_atomically(o.profile_out, profile_json(p).dump(1) + "\n");
  progress->note(profile_table(p) + fmt::format("profile: {}", o.profile_out.string()));
}

// --profile where the device counts instead of timing: the step's launches' counts, said as such.
void note_counted_profile(int64_t step, const TrainOptions& o, runtime::Device& device, size_t before,
                          std::optional<run_folder::Progress>& progress) {
  const runtime::CountedLaunches& counted = *device.counted_launches();
  const std::vector<runtime::PtxLaunchRecord>& all = counted.launches();
  const std::vector<runtime::PtxLaunchRecord> launches(all.begin() + static_cast<std::ptrdiff_t>(before), all.end());
  if (!progress) return;  // (rank 0 says it)
  if (!o.counted_profile) throw std::logic_error("--profile on a counting device with no counted_profile to print");
  progress->note(fmt::format("profile of step {}: the emulated GPU's counts of its {} kernel launches (the device keeps "
                             "no time: counts and projections, not measurements; no {} written)\n{}",
                             step, launches.size(), o.profile_out.filename().string(),
                             o.counted_profile(launches, device.capabilities().sm, o.config.compile.precision,
                                               counted.registers_known())));
}

}  // namespace

int64_t dropout_seed(uint64_t seed, int64_t micro_batch) {
  const auto m = static_cast<uint64_t>(micro_batch);
  const auto r = ir::philox4x32_10({static_cast<uint32_t>(m), static_cast<uint32_t>(m >> 32), 0xd207u, 0},
                                   {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
  return static_cast<int64_t>((static_cast<uint64_t>(r[0]) << 32 | r[1]) >> 1);
}

passes::TrainingProgram runnable_program(passes::TrainingProgram program) {
  // A model without some of them (a custom model's graph) still compiles; training it says what
  // its graph lacks.
  auto present = [](const ir::Graph& g, std::vector<std::string> names) {
    std::erase_if(names, [&](const std::string& n) { return !g.find(n); });
    return names;
  };
  const Fetches fetches = fetches_of(program.step, program.optimizer);
  program.step = with_fetched_outputs(std::move(program.step), present(program.step, fetches.step));
  program.optimizer = with_fetched_outputs(std::move(program.optimizer), present(program.optimizer, fetches.optimizer));
  return program;
}

TrainSummary train_model(const frontend::ModelDefinition& model, const TrainOptions& options, std::ostream& log) {
  TrainOptions o = options;
  const std::shared_ptr<distributed::Communicator> world = o.world ? o.world : distributed::single_process();
  distributed::Communicator& comm = *world;
  // The run folder is this run's before anything is read from or written to it (rank 0 writes it).
  std::optional<run_folder::RunFolderLock> folder_lock;
  if (comm.rank() == 0) {
    run_folder::refuse_run_folder_in_use(o.checkpoint_dir);  // (first: a running run's metrics would be blamed instead)
    o.metrics = run_folder::check_metrics_path(o.metrics);  // (before anything is made: a slip of --metrics is refused first)
    folder_lock.emplace(o.checkpoint_dir, log);
    run_folder::remove_leftover_temporaries(o.checkpoint_dir, log);
  }
  const run_folder::StopOnSignal stop_on_signal;
  // Start-up waits allow for a rank compiling kernels the others found in their caches.
  comm.set_timeout(std::max(o.config.train.rank_timeout, 3600.0));
  check_same_start(comm, o.config, o.device.value_or("cpu"));
  // The device first: a missing GPU is cheaper to find than the program is to compile.
  const std::shared_ptr<runtime::Device> device = open_training_device(o);
  if (device && device->capabilities().gpu) log << fmt::format("device: {}\n", device->name());
  keep_global_batch(o, comm, log);
  if (o.auto_batch) choose_batch(model, o, device.get(), comm, log);
  const run_config::TrainConfig& t = o.config.train;
  // The optimizer averages the gradients of every rank's micro-batches.
  passes::OptimizerOptions optimizer = t;
  optimizer.gradient_accumulation_steps = t.gradient_accumulation_steps * comm.size();
  const passes::TrainingProgram program =
      o.compiled ? program_of(*o.compiled, comm)
                 : passes::compile_training(frontend::build_model(model, o.config.model_settings()), o.config.compile, optimizer);
  require_checked_indices(program.step, o.config);
  log << compile_summary(o.config.compile, program) << "\n";
  // What this rank runs: the program, or with ZeRO stage 1 the optimizer graph of its shard.
  const passes::TrainingProgram running = sharded_program(program, o, optimizer, comm, log);
  // The vocabulary, said at the start, and checked against everything recorded with another.
  const data::Vocab vocab = load_run_vocab(o.config, o.vocab, log);
  if (comm.rank() == 0) run_folder::say_init_lower_case(o.config, o.init, log);
  if (const auto compiled_with = o.compiled ? data::vocab_from_metadata(o.compiled->vocab) : std::nullopt)
    data::require_same_vocab(vocab, *compiled_with, "the compiled program",
                             "train it with the vocabulary its config named when it was compiled (--vocab FILE), or "
                             "compile it again with this one ([train] vocab)");
  // Checkpoint problems first: they are cheaper to find than the data is to load. Rank 0 reads
  // them (and --init's file); the others get its state.
  support::Environment env;
  int64_t start = 0;
  std::optional<run_folder::ResumedFrom> resumed;
  if (comm.rank() == 0) start = run_folder::prepare_state(
      model, {o.config, o.checkpoint_dir, o.resume, o.init, o.world ? o.world->size() : 1, o.compiled != nullptr},
      program, vocab, env, log, resumed);
  else run_folder::fresh_state(o.config, program, env);
  // The run's name, in its checkpoints and its metrics lines: a resumed run keeps its own (and
  // finds by it a metrics file of another run); a checkpoint that names none (an older bertc's, or
  // edited) one derived from its record, the same at every resume from it.
  const std::optional<std::string> recorded_run =
      resumed ? std::optional<std::string>(run_folder::resumed_run_id(resumed->metadata)) : std::nullopt;
  const std::string run_id = recorded_run.value_or(run_folder::new_run_id());
  DataParallel dp(comm, program, t);
  dp.share_state(env, run_folder::manifest_of(program), start);
  dp.drop_others_state(env);
  if (const std::string said = dp.restore_exchange_state(env); !said.empty() && start > 0) log << said << "\n";
  std::erase_if(env, [](const auto& entry) { return entry.first.starts_with(run_folder::kExchangeStatePrefix); });  // (taken)
  TrainSummary summary;
  int64_t last = std::min(o.stop_after, t.steps);
  if (start >= last) {
    // (the run's own end first: --until past it is refused, so "give --until past N" led nowhere)
    log << (start >= t.steps
                ? fmt::format("the checkpoint is at step {}, {} (--steps {}): nothing to do (give --steps past {} to "
                              "train on)\n",
                              start, start == t.steps ? "the run's last step" : fmt::format("past the run's last step {}", t.steps),
                              t.steps, start)
                : fmt::format("already at step {}, where --until {} stops: nothing to do (give --until past {}, up to "
                              "--steps {})\n",
                              start, o.stop_after, start, t.steps));
    return summary;
  }
  if (o.profile_step && !device)
    throw run_folder::TrainError("--profile times the launches of a compiled program on a device, and the CPU reference runs none: "
                     "train with --device cuda (or host)");
  const bool untimed_gpu = o.profile_step && device->capabilities().gpu && !device->capabilities().times_measured;
  const bool counted_profile = untimed_gpu && device->counted_launches();
  if (untimed_gpu && !counted_profile)
    throw run_folder::TrainError(fmt::format("--profile times the launches with the GPU's events, and the driver of {} keeps "
                                             "no time: profile on a GPU, or count the emulated kernels' work with bertc check "
                                             "CONFIG --device ptx",
                                             device->name()));
  if (o.profile_step && (*o.profile_step <= start || *o.profile_step > last))
    throw run_folder::TrainError(fmt::format("--profile {} is not a step of this run (steps {} to {}): give one of those", *o.profile_step,
                                 start + 1, last));
  Runners runners = make_runners(model, o, running, device, log);
  std::optional<data::BatchStream> opened;
  try {
    opened.emplace(open_batch_stream(o.config, o.data, vocab, log));
  } catch (const data::Stopped& stopped) {  // (text being read: minutes on a large corpus)
    log << fmt::format("stopped by {} {}, before the first step: nothing to save; run the same command again\n",
                       run_folder::signal_name(stopped.signal()), stopped.what());
    summary.stopped_by_signal = stopped.signal();
    summary.first_step = start + 1, summary.last_step = start;
    return summary;
  }
  const data::BatchStream& stream = *opened;
  // What the rows leave an attention over them, for MFU (on a GPU) and a profile's estimates (for
  // the config's GPU): measured only where one of them is wanted (the sample loads a shard).
  const bool mfu = runners.figures.model_flops_per_step > 0;
  const passes::RowFractions rows =
      t.examples_per_row() > 0 && (mfu || (o.profile_step && o.config.compile.arch.gpu()))
          ? row_fractions(o.config, stream.source())
          : passes::RowFractions{};
  if (mfu && rows.measured()) runners.figures.model_flops_per_step = model_flops_per_step(model, o.config, program, rows);
  if (resumed) run_folder::check_same_data(*resumed, stream, log);
  dp.check_same_run(ir::print(program.step) + ir::print(program.optimizer), data_identity(stream, vocab),
                    device ? device->name() : "the CPU reference");
  const std::string sums = dp.attach(*runners.step, *runners.optimizer, device.get());
  if (dp.exchanges())
    log << fmt::format("data parallel: {}; global batch {} ranks x {} x {} accumulation steps = {}; gradients {} "
                       "({:.1f} MiB fp32 per step) in buckets of {:g} MiB, {}\n",
                       comm.describe(), dp.ranks(), t.batch_size, t.gradient_accumulation_steps,
                       dp.ranks() * t.batch_size * t.gradient_accumulation_steps, ir::enum_name(t.gradient_compression),
                       static_cast<double>(dp.dense_bytes()) / (1 << 20), t.allreduce_bucket_mb, sums);
  if (dp.leader()) std::filesystem::create_directories(o.checkpoint_dir);
  const int64_t K = t.gradient_accumulation_steps;
  // (step x K x ranks x batch_size, a sequence's number in the data's stream, wrapped past 2^63
  // and a step far on trained on another step's sequences; K x ranks x batch_size is at most 2^31)
  // (unsigned: at batch_size 1 the last micro-batch is 2^63 - 1, and one more wrapped; every step
  // a run can name is then within)
  if (const auto most = static_cast<int64_t>(std::min<uint64_t>(
          (static_cast<uint64_t>(stream.last_micro_batch()) + 1) / static_cast<uint64_t>(K * dp.ranks()),
          std::numeric_limits<int64_t>::max()));
      last > most)
    throw run_folder::TrainError(fmt::format("steps {}: the sequences of a step past {} ({} a step: {} x {} accumulation steps x {} "
                                 "rank(s)) are numbered past 2^63 in the data's stream: stop by step {} (--until {}, "
                                 "or [train] steps)",
                                 last, most, K * dp.ranks() * t.batch_size, t.batch_size, K, dp.ranks(), most, most));
  // The loader thread makes the next micro-batches while the current one trains.
  BatchLoader loader(
      [&](int64_t micro) {
        LoadedBatch b{micro, stream.batch(dp.global_micro_batch(micro)), {}};
        bind_batch(b.batch, b.inputs);
        check_batch_ranges(b.inputs, o.config, fmt::format("micro-batch {}", dp.global_micro_batch(micro)));
        return b;
      },
      start * K, last * K);
  comm.set_timeout(t.rank_timeout);
  // Rank 0 reports; the others train quietly.
  std::optional<run_folder::Progress> progress;
  runners.figures.ranks = dp.ranks();
  runners.figures.compression = ir::enum_name(t.gradient_compression);
  if (folder_lock) folder_lock->writing();  // (a hard stop from here on leaves the folder: it holds the run's files)
  if (dp.leader()) {
    // Steps after the checkpoint that a stopped run recorded are trained again: their lines go.
    // A run from step 1 keeps any file of metrics it finds aside (a run killed here before its
    // first checkpoint included: its steps are not in the new file twice, and nothing is lost).
    if (start > 0) {
      std::string carried;
      if (resumed)
        if (const auto it = resumed->metadata.find(run_folder::kMetricsUnwrittenKey); it != resumed->metadata.end()) carried = it->second;
      run_folder::keep_metrics_through(o.metrics, start, recorded_run, log, carried);
    }
    else run_folder::start_metrics_afresh(o.metrics, log);
    progress.emplace(log, o.metrics, start + 1, last, t.log_every, o.live_progress, runners.figures, run_id);
  }
  summary.first_step = start + 1;
  // A signal while compiling or reading data: nothing trained, nothing to save.
  if (int stop = run_folder::stop_requested(); stop && comm.size() == 1) {
    log << fmt::format("stopped by {} before the first step: nothing to save; run the same command again\n",
                       run_folder::signal_name(stop));
    summary.stopped_by_signal = stop;
    summary.first_step = start + 1, summary.last_step = start;
    return summary;
  }
  // The checkpoint of step `step` (the training state as it stands after it), written by rank 0
  // with every rank taking part; `say`: noted on the console.
  const auto write_checkpoint = [&](int64_t step, int stop, bool say) {
    runners.optimizer->download_state(env);
    dp.check_same_parameters(env, run_folder::manifest_of(program), step);
    const support::Environment exchange = dp.exchange_state();
    dp.gather_sharded_state(env, run_folder::manifest_of(program));
    if (!dp.leader()) return;
    std::map<std::string, std::string> metadata = run_folder::run_metadata(model, o.config, dp.ranks());
    metadata["world_size"] = std::to_string(dp.ranks());
    metadata["gradient_accumulation_steps"] = std::to_string(K);
    metadata["schedule_steps"] = std::to_string(t.steps);  // (the total the learning rate was planned over)
    metadata[run_folder::kRunIdKey] = run_id;
    if (stop == kStopForMetrics && progress) metadata[run_folder::kMetricsUnwrittenKey] = progress->unwritten_line();
    metadata.merge(run_folder::data_metadata(stream));
    metadata.merge(run_folder::settings_metadata(o.config));
    metadata.merge(run_folder::export_metadata(o.config, vocab));
    run_folder::save_checkpoint(o.checkpoint_dir, step, run_folder::manifest_of(program), env, std::move(metadata), t.keep_checkpoints,
                    exchange);
    dp.drop_others_state(env);  // (ZeRO: the other ranks' state, gathered for the file)
    if (say) progress->note(fmt::format("checkpoint: {}", run_folder::checkpoint_path(o.checkpoint_dir, step).string()));
  };
  for (int64_t s = start + 1; s <= last; ++s) {
    const auto began = Clock::now();
    // On a GPU the MLM logits (batch x predictions x vocabulary) come back only on the steps that
    // print a window's accuracy: copying them and their argmax on the host every step would
    // cost the GPU a noticeable share of a step.
    const bool sample = !runners.on_gpu || s % t.log_every == 0 || s == start + 1 || s == last;
    std::vector<TimedPlan> timed;
    size_t counted_before = 0;  // (the device's counted launches before this step's)
    if (o.profile_step == s && counted_profile) counted_before = device->counted_launches()->launches().size();
    else if (o.profile_step == s) timed = profile_next_step(runners);
    run_folder::StepStats stats = [&] {
      try {
        return train_step(s, o, runners, loader, env, dp, sample);
      } catch (const run_folder::Diverged& e) {
        // (at step 1 the advice is whole: there is nothing to start again from)
        throw run_folder::TrainError(s == 1 ? std::string(e.what()) : fmt::format("{}{}", e.what(), start_again(o)));
      } catch (const data::DataError& e) {  // (a shard from elsewhere, checked as it is read)
        // The data failed before step s updated anything: the state after step s - 1 is whole, and
        // kept (its steps were lost). One rank only: several would have to agree first.
        const auto kept = run_folder::list_checkpoints(o.checkpoint_dir);
        if (comm.size() == 1 && s - 1 > start && (kept.empty() || kept.back().step != s - 1))
          write_checkpoint(s - 1, 0, true);
        throw run_folder::TrainError(fmt::format("{} (at step {}): {}", e.what(), s, data_failed_advice(o)));
      }
    }();
    stats.seconds = std::chrono::duration<double>(Clock::now() - began).count();
    if (progress) progress->record(stats);
    say_recorded_graphs(runners, progress ? &*progress : nullptr);
    if (!timed.empty()) write_profile(s, o, *device, timed, rows, progress);
    if (o.profile_step == s && counted_profile) note_counted_profile(s, o, *device, counted_before, progress);
    summary.losses.push_back(stats.loss);
    // A signal on any rank stops every rank after the same step; so does rank 0's metrics file
    // failing (a full disk), with a stop of its own (not a signal's: the run then ends in an error).
    int stop = run_folder::stop_requested();
    if (progress && !progress->metrics_failure().empty()) stop = std::max(stop, kStopForMetrics);
    stop = dp.agreed_stop(stop, s);
    const bool checkpoint = (t.checkpoint_every > 0 && s % t.checkpoint_every == 0) || s == last || stop;
    if (checkpoint) write_checkpoint(s, stop, s == last || stop || !o.live_progress);
    // A signal that came while the checkpoint was written: that checkpoint is the stop's (one rank:
    // ranks agree on stopping only after a step).
    if (!stop && checkpoint && comm.size() == 1) stop = run_folder::stop_requested();
    if (stop == kStopForMetrics) {
      if (comm.size() > 1) comm.meet("the stop's checkpoint");
      throw run_folder::TrainError(fmt::format("{} (the run stopped after step {}, with its checkpoint)",
                                   progress ? progress->metrics_failure() : "rank 0 could not write the metrics", s));
    }
    if (stop && s < last) {
      // Every rank waits for rank 0's checkpoint: a rank that ended first (exit 130/143) would get a
      // launcher (torchrun, srun) to kill the rest, rank 0 amid its write.
      if (comm.size() > 1) comm.meet("the stop's checkpoint");
      summary.stopped_by_signal = stop;
      last = s;
      if (progress)
        progress->note(fmt::format("stopped by {} after step {}: continue with the same command and --resume",
                                   run_folder::signal_name(stop),
                                   s));
      break;
    }
  }
  summary.last_step = last;
  const size_t n = std::min<size_t>(static_cast<size_t>(t.log_every), summary.losses.size());
  summary.first_loss = std::accumulate(summary.losses.begin(), summary.losses.begin() + n, 0.0) / double(n);
  summary.last_loss = std::accumulate(summary.losses.end() - n, summary.losses.end(), 0.0) / double(n);
  return summary;
}

}  // namespace bertc::train
