// The fine-tuning loop (see finetune.h): epochs of bucketed batches, the dev set after each.
#include "train/finetune.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <csignal>
#include <cmath>
#include <limits>
#include <fstream>
#include <memory>
#include <numeric>

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "codegen/matrix_strategy.h"
#include "data/task_data.h"
#include "data/vocab.h"
#include "run_config/hf_config.h"
#include "ir/value_names.h"
#include "passes/pipeline.h"
#include "devices/device_registry.h"
#include "runtime/device_target.h"
#include "train/batches.h"
#include "train/data_parallel.h"
#include "ir/printer.h"
#include "run_folder/checkpoint.h"
#include "train/graph_runner.h"
#include "train/lr_schedule.h"
#include "run_folder/resume.h"
#include "run_folder/progress.h"
#include "run_folder/run_lock.h"
#include "run_folder/stop_request.h"
#include "train/trainer.h"
#include "support/resolved_path.h"
#include "support/shell_word.h"

namespace bertc::train {
namespace {

using Clock = std::chrono::steady_clock;
namespace names = ir::names;
using frontend::FinetuneTask;

data::LabelKind label_kind(FinetuneTask task) {
  switch (task) {
    case FinetuneTask::SequenceClassification: return data::LabelKind::Class;
    case FinetuneTask::Regression: return data::LabelKind::Real;
    case FinetuneTask::TokenClassification: return data::LabelKind::Tags;
  }
  throw std::logic_error("label_kind: unknown task");
}

data::TaskFormat format_of(const run_config::Config& c, int64_t max_len) {
  const run_config::FinetuneConfig& f = c.finetune;
  data::TaskFormat format;
  format.kind = label_kind(f.task);
  format.text_a = f.text_a, format.text_b = f.text_b, format.label = f.label;
  format.tsv_header = f.tsv_header;
  format.label_names = f.label_names();
  format.num_labels = f.num_labels;
  // (a count that follows from labels or the task is no default: check_finetune holds it to them)
  format.num_labels_default = !c.given.count("finetune.num_labels") && format.label_names.empty() &&
                              f.task != frontend::FinetuneTask::Regression;
  format.max_len = max_len;
  return format;
}

// The batch as the fine-tuning graph's inputs.
void bind_task_batch(const data::TaskBatch& b, data::LabelKind kind, support::Environment& env) {
  const ir::Shape tokens{b.batch, b.seq_len};
  const ir::Shape labels = kind == data::LabelKind::Tags ? tokens : ir::Shape{b.batch};
  auto ints = [&](const std::string& name, const ir::Shape& shape, const std::vector<int32_t>& values) {
    support::HostTensor t = support::HostTensor::zeros({ir::DType::I32, shape});
    t.integer.assign(values.begin(), values.end());
    env[name] = std::move(t);
  };
  auto reals = [&](const std::string& name, const ir::Shape& shape, const std::vector<float>& values) {
    support::HostTensor t = support::HostTensor::zeros({ir::DType::F32, shape});
    t.real = values;
    env[name] = std::move(t);
  };
  ints("input_ids", tokens, b.input_ids);
  ints("token_type_ids", tokens, b.token_type_ids);
  ints("attention_mask", tokens, b.attention_mask);
  if (kind == data::LabelKind::Real) reals(std::string(names::kLabels), labels, b.targets);
  else ints(std::string(names::kLabels), labels, b.labels);
  reals(std::string(names::kLabelWeights), labels, b.weights);
}

// One compiled sequence length: its training step and its evaluation graph (dropout off).
struct Bucket {
  int64_t seq_len = 0;
  passes::TrainingProgram program;
  ir::Graph evaluation;
  std::unique_ptr<GraphRunner> step, evaluate;
};

// The step and evaluation graphs of every bucket (each compiled once; a device caches its
// kernels), both through the passes at the run's precision, on the reference as on a device.
// `optimizer`: [train]'s, averaging the gradients of every rank's micro-batches.
std::vector<Bucket> compile_buckets(const frontend::ModelDefinition& model, const run_config::Config& c,
                                    const passes::OptimizerOptions& optimizer) {
  std::vector<Bucket> out;
  const std::vector<int64_t> lengths = c.finetune.buckets(c.train.seq_len);
  if (!c.compile.dump_ir.empty())
    passes::remove_earlier_dumps(c.compile.dump_ir, std::set<int64_t>(lengths.begin(), lengths.end()));
  for (int64_t len : lengths) {
    run_config::Config shaped = c;
    shaped.train.seq_len = len;
    Bucket b;
    b.seq_len = len;
    // (--dump-ir: each bucket's stages in a folder of its own, seq-N; in one folder each bucket's
    // compile replaced the one before, leaving the last bucket's, which no example may have used)
    passes::CompileOptions training = c.compile;
    if (!training.dump_ir.empty())
      training.dump_ir = (std::filesystem::path(training.dump_ir) / fmt::format("seq-{}", len)).string();
    b.program = passes::compile_training(frontend::build_model(model, shaped.model_settings()), training, optimizer);
    shaped.compile.dropout = false;
    b.evaluation = passes::compile_evaluation(frontend::build_model(model, shaped.model_settings()), shaped.compile);
    for (const ir::Graph* g : {&b.program.step, &b.evaluation}) require_checked_indices(*g, shaped);
    out.push_back(std::move(b));
  }
  return out;
}

// "classifier.weight, classifier.bias" or "41 tensors (cls.predictions.bias, ...)".
std::string name_list(const std::vector<std::string>& names) {
  if (names.size() <= 4) return fmt::format("{}", fmt::join(names, ", "));
  return fmt::format("{} tensors ({}, {}, ...)", names.size(), names[0], names[1]);
}

// --init: the encoder from a checkpoint; the task head is made fresh whatever the file holds (a
// fine-tuned checkpoint's head is of another task, or another number of labels), and only it (and
// a pooler a BertModel file may lack) may be missing.
void load_init(const std::filesystem::path& init, const ir::Graph& graph, const data::Vocab& vocab, bool lower_case,
               support::Environment& env, std::ostream& log) {
  const run_folder::PretrainedReport r = run_folder::load_pretrained(init, graph, env, {"classifier."});
  run_folder::check_init_vocab(init, r.metadata, vocab, lower_case, log, "[train] vocab in the config");
  std::vector<std::string> encoder_missing;
  for (const std::string& name : r.missing)
    if (!name.starts_with("classifier.") && !name.starts_with("bert.pooler.")) encoder_missing.push_back(name);
  if (!encoder_missing.empty())
    throw run_folder::TrainError(fmt::format("--init {}: it lacks {} of the model's params ({}): is it a checkpoint of this "
                                 "model, with the config's [model] sizes?",
                                 init.string(), encoder_missing.size(), name_list(encoder_missing)));
  // A bertc checkpoint holds the optimizer's state too: said apart from the unused params.
  // (the file's own task head, set aside, among them: trained weights thrown away are said, not
  // "no params")
  // (the file's own head set aside is said with the head made fresh, not as two lists of one name)
  std::vector<std::string> unused_params, head_set_aside;
  int64_t optimizer_state = 0;
  for (const std::string& name : r.set_aside) {
    if (run_folder::is_optimizer_state(name)) ++optimizer_state;
    else head_set_aside.push_back(name);
  }
  for (const std::string& name : r.unexpected) {
    if (run_folder::is_optimizer_state(name)) ++optimizer_state;
    else unused_params.push_back(name);
  }
  log << fmt::format("init: {} params from {}; made fresh: {}{}; not used: {}{}\n", r.loaded.size(), init.string(),
                     r.missing.empty() ? "none" : name_list(r.missing),
                     head_set_aside.empty() ? "" : " (the file's own task head set aside: this task's is new)",
                     unused_params.empty() ? "no params" : name_list(unused_params),
                     optimizer_state ? fmt::format(" and {} optimizer states", optimizer_state) : "");
}

struct Runners {
  std::vector<Bucket> buckets;
  std::unique_ptr<GraphRunner> optimizer;
};

void make_runners(const FinetuneOptions& o, Runners& r, const std::shared_ptr<runtime::Device>& device,
                  std::ostream& log) {
  const std::vector<std::string> norm = {std::string(names::kGradNorm)};
  const passes::TrainingProgram& first = r.buckets.front().program;
  if (!device) {
    for (Bucket& b : r.buckets) {
      b.step = reference_runner(b.program.step, {});
      b.evaluate = reference_runner(b.evaluation, {});
    }
    r.optimizer = reference_runner(first.optimizer, norm);
    return;
  }
  // Every bucket's graphs share the params, moments and accumulators on the device.
  const auto state = std::make_shared<runtime::ResidentState>(*device);
  const runtime::Launching launching = o.eager ? runtime::Launching::Eager : runtime::Launching::Graph;
  std::string note;
  const codegen::RenderTarget target = runtime::device_render_target(o.config.compile, device->capabilities(), &note);
  if (!note.empty()) log << note << "\n";
  for (Bucket& b : r.buckets) {
    b.step = plan_runner(b.program.step, {}, target, device, state, launching);
    b.evaluate = plan_runner(b.evaluation, {}, target, device, state, launching);
  }
  r.optimizer = plan_runner(first.optimizer, norm, target, device, state, launching);
}

std::vector<const data::TaskExample*> examples_of(const data::TaskData& data, const data::PlannedBatch& planned) {
  std::vector<const data::TaskExample*> out;
  for (size_t i : planned.examples) out.push_back(&data.examples[i]);
  return out;
}

size_t argmax(const float* row, int64_t n) { return static_cast<size_t>(std::max_element(row, row + n) - row); }

// The dev set's scores with the current weights (dropout off).
TaskScores evaluate_dev(const run_config::Config& c, Runners& r, const data::TaskData& dev, support::Environment& env) {
  const data::LabelKind kind = label_kind(c.finetune.task);
  const int64_t L = c.finetune.num_labels;
  std::vector<int64_t> lengths;
  for (const Bucket& b : r.buckets) lengths.push_back(b.seq_len);
  std::vector<int32_t> truth, predicted;
  std::vector<std::vector<int32_t>> truth_sentences, predicted_sentences;  // (tags: for the entities)
  std::vector<float> targets, predictions;
  double loss = 0, weight = 0;
  for (const data::PlannedBatch& planned : data::plan_batches(dev.examples, lengths, c.train.batch_size, 0, 0, false)) {
    Bucket& bucket = r.buckets[planned.bucket];
    const data::TaskBatch batch = data::make_task_batch(examples_of(dev, planned), kind, c.train.batch_size, bucket.seq_len);
    bind_task_batch(batch, kind, env);
    check_batch_ranges(env, c, fmt::format("{} line {}", dev.path.string(), dev.examples[planned.examples[0]].line));
    const reference::RunResult<float> out = bucket.evaluate->run(env);
    const double w = std::accumulate(batch.weights.begin(), batch.weights.end(), 0.0);
    loss += out.outputs.at(0).real.at(0) * w;
    weight += w;
    const std::vector<float>& logits = out.outputs.at(1).real;  // (build_finetune_graph's second output)
    if (!std::all_of(logits.begin(), logits.end(), [](float x) { return std::isfinite(x); }))
      throw run_folder::TrainError(fmt::format("the dev set's logits are not finite (the weights diverged): lower [train] "
                                   "learning_rate and fine-tune again into a new --checkpoint-dir (the finished "
                                   "epochs' checkpoints stay where they are)"));
    if (kind == data::LabelKind::Real) {
      for (int64_t row = 0; row < batch.examples; ++row) {
        targets.push_back(batch.targets[static_cast<size_t>(row)]);
        predictions.push_back(logits[static_cast<size_t>(row)]);
      }
      continue;
    }
    // Classes: one row of logits per example; tags: one per token, the counted ones.
    for (size_t row = 0; row < batch.weights.size(); ++row) {
      if (kind == data::LabelKind::Tags && row % static_cast<size_t>(batch.seq_len) == 0 &&
          row / static_cast<size_t>(batch.seq_len) < static_cast<size_t>(batch.examples))
        truth_sentences.emplace_back(), predicted_sentences.emplace_back();
      if (batch.weights[row] == 0) continue;
      truth.push_back(batch.labels[row]);
      predicted.push_back(static_cast<int32_t>(argmax(logits.data() + row * static_cast<size_t>(L), L)));
      if (kind == data::LabelKind::Tags) truth_sentences.back().push_back(truth.back()),
                                          predicted_sentences.back().push_back(predicted.back());
    }
  }
  const std::vector<std::string> names = c.finetune.label_names();
  const auto outside = std::find_if(names.begin(), names.end(), is_outside);
  const int32_t left_out = kind == data::LabelKind::Tags && outside != names.end()
                               ? static_cast<int32_t>(outside - names.begin()) : -1;
  TaskScores s = kind == data::LabelKind::Real ? regression_scores(targets, predictions)
                                               : classification_scores(truth, predicted, L, left_out);
  if (kind == data::LabelKind::Tags && train::tags_name_entities(names))
    s.f1 = entity_f1(truth_sentences, predicted_sentences, names);
  s.loss = loss / weight;
  return s;
}

// The scores of the run's task (a regression's have no accuracy; a classification's no
// correlations); an undefined one is null.
nlohmann::json scores_json(const TaskScores& s, frontend::FinetuneTask task) {
  auto value = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  if (task == frontend::FinetuneTask::Regression)
    return {{"count", s.count}, {"loss", value(s.loss)}, {"pearson", value(s.pearson)},
            {"spearman", value(s.spearman)}, {"mse", value(s.mse)}};
  return {{"count", s.count}, {"loss", value(s.loss)}, {"accuracy", s.accuracy}, {"f1", s.f1}, {"mcc", s.mcc}};
}

// What a fine-tuning checkpoint records besides the run's facts: the task and, after an
// evaluation, its scores; `ranks`: the run's.
std::map<std::string, std::string> task_metadata(const frontend::ModelDefinition& model, const run_config::Config& c,
                                                 int ranks, int64_t epoch, const std::optional<TaskScores>& dev) {
  std::map<std::string, std::string> m = run_folder::run_metadata(model, c, ranks);
  m["finetune_task"] = std::string(ir::enum_name(c.finetune.task));
  m["num_labels"] = std::to_string(c.finetune.num_labels);
  m["labels"] = c.finetune.labels;
  m["epoch"] = std::to_string(epoch);
  if (dev) m["dev_scores"] = scores_json(*dev, c.finetune.task).dump();
  return m;
}

class MetricsFile {
 public:
  // A fine-tuning run starts afresh (start_metrics_afresh kept any earlier run's file aside).
  explicit MetricsFile(const std::filesystem::path& path)
      : path_(path), out_(path, std::ios::trunc), in_use_(opened(path)) {}
  void write(const nlohmann::json& line) {
    run_folder::append_metrics_line(out_, path_, line.dump(), line.value("step", int64_t{0}),
                        "fine-tune again in another --checkpoint-dir (fine-tuning does not resume; the epochs' "
                        "checkpoints written so far are kept)");
  }

 private:
  const std::filesystem::path& opened(const std::filesystem::path& path) const {
    if (!out_)
      throw run_folder::TrainError(fmt::format("{}: cannot open the metrics file for writing: {} (--metrics names a file in a "
                                   "folder that exists and is writable)",
                                   path.string(), std::strerror(errno)));
    return path;
  }
  std::filesystem::path path_;
  std::ofstream out_;
  run_folder::MetricsInUse in_use_;  // (after out_: the file exists when it is locked)
};

// The best checkpoint's folder, checked before the first step (it was found unusable only when
// the first epoch's checkpoint was written, the epoch lost and the folder then refused as a
// run's): a file, a link to nothing or a loop in its place, the metrics named there, or a folder
// this user may not write is said at once.
void require_best_folder_usable(const std::filesystem::path& best, const std::filesystem::path& metrics,
                                std::ostream& log) {
  std::error_code ec;
  if (support::resolved_path(metrics) == support::resolved_path(best))
    throw run_folder::TrainError(fmt::format("--metrics {}: is where fine-tuning keeps its best checkpoint (a folder): name "
                                 "another file",
                                 metrics.string()));
  const bool link = std::filesystem::is_symlink(best, ec);
  if ((link || std::filesystem::exists(best, ec)) && !std::filesystem::is_directory(best, ec))
    throw run_folder::TrainError(fmt::format("{}: {}, where fine-tuning keeps its best checkpoint (a folder): move it away, or "
                                 "give another --checkpoint-dir",
                                 best.string(), link ? "a link to no folder (missing, or a loop)" : "a file"));
  // A link to a folder is followed (a best checkpoint kept on another disk), and said; one to the
  // run folder itself would put the best checkpoint among the epochs' and prune them as its own.
  if (link && std::filesystem::is_directory(best, ec)) {
    const std::filesystem::path target = std::filesystem::canonical(best, ec);
    if (target == std::filesystem::canonical(best.parent_path(), ec))
      throw run_folder::TrainError(fmt::format("{}: a link to the run folder itself, where fine-tuning keeps its best checkpoint "
                                   "apart from the epochs' (it would prune them as its own): remove the link, or "
                                   "point it to another folder",
                                   best.string()));
    log << fmt::format("finetune: {} is a link to {}: the best checkpoint is kept there\n", best.string(),
                       target.string());
  }
  // (not made here: a run refused later leaves no folder it made; the run folder, where it goes,
  // is writable: its lock was written there)
  if (std::filesystem::is_directory(best, ec) && ::access(best.c_str(), W_OK | X_OK) != 0)
    throw run_folder::TrainError(fmt::format("{}: cannot be written ({}), and fine-tuning keeps its best checkpoint there: make it "
                                 "writable, or give another --checkpoint-dir",
                                 best.string(), std::strerror(errno)));
}

}  // namespace

support::Safetensors task_batch_file(const run_config::Config& c, const std::filesystem::path& path,
                                     const data::Vocab& vocab, int64_t index, std::ostream& log) {
  const run_config::FinetuneConfig& f = c.finetune;
  const data::Tokenizer tokenizer(vocab, c.train.do_lower_case);
  const std::vector<int64_t> lengths = f.buckets(c.train.seq_len);
  const data::TaskData examples = data::read_task_file(path, format_of(c, lengths.back()), tokenizer, vocab);
  for (const std::string& note : examples.notes) log << "data: " << note << "\n";
  const std::vector<data::PlannedBatch> planned =
      data::plan_batches(examples.examples, lengths, c.train.batch_size, 0, 0, false);
  if (index < 0 || static_cast<size_t>(index) >= planned.size())
    throw std::invalid_argument(fmt::format("{}: its {} examples make {} batch(es) of up to {} (as a dev pass makes "
                                            "them), and --index {} is past them: give --index 0 to {}",
                                            path.string(), examples.examples.size(), planned.size(),
                                            c.train.batch_size, index, planned.size() - 1));
  const data::PlannedBatch& chosen = planned[static_cast<size_t>(index)];
  const data::TaskBatch batch = data::make_task_batch(examples_of(examples, chosen), label_kind(f.task),
                                                      c.train.batch_size, lengths[chosen.bucket]);
  support::Environment env;
  bind_task_batch(batch, label_kind(f.task), env);
  support::Safetensors file;
  for (const auto& [name, tensor] : env) file.tensors[name] = support::to_stored(tensor);
  file.metadata["format"] = "bertc-batch";
  // (what its label numbers mean: eval checks them against the config's and the weights')
  file.metadata["finetune_task"] = std::string(ir::enum_name(f.task));
  file.metadata["labels"] = f.labels;
  return file;
}

FinetuneSummary finetune_model(const frontend::ModelDefinition& model, const FinetuneOptions& options, std::ostream& log) {
  FinetuneOptions o = options;
  run_config::Config& c = o.config;
  const run_config::FinetuneConfig& f = c.finetune;
  const std::shared_ptr<distributed::Communicator> world = o.world ? o.world : distributed::single_process();
  distributed::Communicator& comm = *world;
  const bool leader = comm.rank() == 0;
  // The run folder is this run's before anything is read from or written to it (rank 0 writes it).
  std::optional<run_folder::RunFolderLock> folder_lock;
  if (leader) {
    run_folder::refuse_run_folder_in_use(o.checkpoint_dir);  // (first: a running run's metrics would be blamed instead)
    o.metrics = run_folder::check_metrics_path(o.metrics);  // (before anything is made: a slip of --metrics is refused first)
    folder_lock.emplace(o.checkpoint_dir, log);
    run_folder::remove_leftover_temporaries(o.checkpoint_dir, log);
    if (!run_folder::list_checkpoints(o.checkpoint_dir).empty() ||
        !run_folder::list_checkpoints(o.checkpoint_dir / "best").empty())
      throw run_folder::TrainError(fmt::format("{} holds a run's checkpoints already, and fine-tuning starts afresh: give "
                                               "another --checkpoint-dir (a fine-tuned checkpoint is a starting point "
                                               "for --init)",
                                               o.checkpoint_dir.string()));
    require_best_folder_usable(o.checkpoint_dir / "best", o.metrics, log);
  }
  const run_folder::StopOnSignal stop_on_signal(
      "stopping after this step, with a checkpoint; signal again to end at once",
      "ended at once by a second signal: the checkpoints written so far are kept, and fine-tuning does not resume: "
      "start again in another --checkpoint-dir, or from a kept checkpoint's encoder with --init");
  // Start-up waits allow for a rank compiling kernels the others found in their caches.
  comm.set_timeout(std::max(c.train.rank_timeout, 3600.0));
  check_same_start(comm, c, o.device.value_or("cpu"));
  runtime::DeviceRequest request{c.compile.arch.sm(), o.kernel_cache, comm.local_rank()};
  request.instead = "fine-tune with --device cpu (the reference) or --device host (the emulation), or where a GPU is";
  request.older_gpu = "fine-tune with --arch auto (or --arch sm_{})";
  const std::shared_ptr<runtime::Device> device = o.device ? devices::open_device(*o.device, request) : nullptr;
  if (device && device->capabilities().gpu) log << fmt::format("device: {}\n", device->name());

  // The examples, cut to the longest compiled length.
  const data::Vocab vocab = load_run_vocab(c, o.vocab, log, /*vocab_flag=*/false);
  run_folder::say_init_lower_case(c, o.init, log);
  const data::Tokenizer tokenizer(vocab, c.train.do_lower_case);
  const std::vector<int64_t> lengths = f.buckets(c.train.seq_len);
  const data::TaskFormat format = format_of(c, lengths.back());
  const data::TaskData train_data = data::read_task_file(o.train_data, format, tokenizer, vocab);
  std::optional<data::TaskData> dev;
  if (o.dev_data) dev = data::read_task_file(*o.dev_data, format, tokenizer, vocab);
  for (const data::TaskData* d : std::initializer_list<const data::TaskData*>{&train_data, dev ? &*dev : nullptr})
    for (const std::string& note : d ? d->notes : std::vector<std::string>{}) log << "data: " << note << "\n";
  // fp16's largest value is 65504, and a regression's squared errors start as the targets' squares:
  // targets past about 255 overflow at step 1, which no learning rate helps.
  if (format.kind == data::LabelKind::Real && c.compile.precision == passes::Precision::Fp16)
    for (const data::TaskData* d : std::initializer_list<const data::TaskData*>{&train_data, dev ? &*dev : nullptr})
      for (const data::TaskExample& e : d ? d->examples : std::vector<data::TaskExample>{})
        if (std::abs(e.target) > 255)
          throw run_folder::TrainError(fmt::format("{} line {}: regression target {} in fp16, whose squared errors overflow past "
                                       "65504 (targets beyond about 255): scale the targets down (divide them by {:g}), "
                                       "or fine-tune in --precision bf16 or fp32",
                                       d == &train_data ? o.train_data.string() : o.dev_data->string(), e.line,
                                       e.target, std::pow(10.0, std::ceil(std::log10(std::abs(e.target) / 255.0)))));
  // A correlation over dev targets that are all one value is undefined (it read 0 every epoch, and
  // the first epoch was kept as the best however the loss went).
  if (const run_config::TaskMetric m = c.finetune.chosen_metric();
      dev && format.kind == data::LabelKind::Real && !dev->examples.empty() &&
      (m == run_config::TaskMetric::Pearson || m == run_config::TaskMetric::Spearman) &&
      std::all_of(dev->examples.begin(), dev->examples.end(),
                  [&](const data::TaskExample& e) { return e.target == dev->examples.front().target; }))
    throw run_folder::TrainError(fmt::format("{}: every dev target is {}, and {} (best_metric) is undefined over targets of one "
                                 "value: no epoch could be told the best; give a dev file whose targets vary",
                                 o.dev_data->string(), dev->examples.front().target, ir::enum_name(m)));
  std::vector<int64_t> per_bucket(lengths.size());
  for (const data::TaskExample& e : train_data.examples)
    ++per_bucket[data::bucket_of(static_cast<int64_t>(e.ids.size()), lengths)];
  std::vector<std::string> shares;
  for (size_t b = 0; b < lengths.size(); ++b) shares.push_back(fmt::format("{} at {}", per_bucket[b], lengths[b]));
  // (what was cut, train and dev alike: a dev word cut off is never scored, a train word never learnt)
  const auto cuts = [&](const data::TaskData& d) {
    return fmt::format("{} cut to {} tokens{}", d.truncated, lengths.back(),
                       d.words_cut ? fmt::format(", {} of their {} words' tags with them", d.words_cut, d.words_in_cut)
                                   : "");
  };
  log << fmt::format("data: {}: {} examples ({}; {}){}\n", o.train_data.string(), train_data.examples.size(),
                     fmt::join(shares, ", "), cuts(train_data),
                     dev ? fmt::format("; dev {}: {} examples ({})", o.dev_data->string(), dev->examples.size(), cuts(*dev))
                         : "");
  // (the padding the buckets leave: issue 39 measured it before packing fine-tuning's rows)
  if (const data::BatchFill fill = data::batch_fill(train_data.examples, lengths, c.train.batch_size); fill.positions > 0)
    log << fmt::format("data: an epoch's {} tokens fill {:.1f}% of the {} positions its batches compute{}\n", fill.tokens,
                       100.0 * static_cast<double>(fill.tokens) / static_cast<double>(fill.positions), fill.positions,
                       lengths.size() > 1
                           ? fmt::format(" ({:.1f}% at seq_len {} alone)",
                                         100.0 * static_cast<double>(fill.tokens) /
                                             static_cast<double>(fill.positions_longest_only),
                                         lengths.back())
                           : "");
  for (const data::TaskData* d : std::initializer_list<const data::TaskData*>{&train_data, dev ? &*dev : nullptr})
    if (d && d->words_cut)
      log << fmt::format("warning: {}: {} of its {} words ({:.0f}%) lie past {} tokens and are cut off with their "
                         "tags: {}; {}\n",
                         d->path.string(), d->words_cut, d->words,
                         100.0 * static_cast<double>(d->words_cut) / static_cast<double>(d->words), lengths.back(),
                         d == &train_data ? "never trained on" : "the dev metrics leave them out",
                         // (at the model's positions a longer seq_len is refused: splitting is the fix)
                         lengths.back() < c.model.max_position_embeddings
                             ? fmt::format("raise [train] seq_len (up to the model's max_position_embeddings, {}) to "
                                           "keep them, or split the long texts",
                                           c.model.max_position_embeddings)
                             : fmt::format("the model reads at most {} positions (its max_position_embeddings), so "
                                           "split the long texts into pieces of fewer words to keep them",
                                           c.model.max_position_embeddings));

  // The schedule: the run's steps follow from the epochs.
  run_config::TrainConfig& t = c.train;
  // A step's micro-batches: K on each of R ranks (R x K x batch_size examples a step).
  const int64_t R = comm.size(), K = t.gradient_accumulation_steps, per_step = R * K;
  const int64_t batches_per_epoch = static_cast<int64_t>(
      data::plan_batches(train_data.examples, lengths, t.batch_size, 0, 0, false).size());
  const int64_t steps_per_epoch = (batches_per_epoch + per_step - 1) / per_step;
  // (a product past 2^63 wrapped: 461168601842738791 epochs x 40 steps ran as 24 steps of schedule,
  // then at learning rate 0 for ever, silently; a micro-batch's number, steps x R x K, as well)
  if (int64_t micro_batches = 0; __builtin_mul_overflow(f.epochs, steps_per_epoch, &t.steps) ||
                                 __builtin_mul_overflow(t.steps, per_step, &micro_batches))
    throw run_folder::TrainError(fmt::format("[finetune] epochs = {} x {} steps an epoch is more steps than a run can count "
                                 "(2^63): set [finetune] epochs (or --epochs) to {} or fewer",
                                 f.epochs, steps_per_epoch, std::numeric_limits<int64_t>::max() / steps_per_epoch));
  t.warmup_steps = static_cast<int64_t>(std::ceil(f.warmup_ratio * static_cast<double>(t.steps)));  // (as HF's recipe)
  const std::string step_examples =
      per_step == 1 ? std::to_string(t.batch_size)
                    : fmt::format("{} ({} rank(s) x {} x {} accumulation steps)", per_step * t.batch_size, R,
                                  t.batch_size, K);
  log << fmt::format("finetune: {} ({}, {} labels) on {}: {} epochs x {} steps = {} steps of {} examples, warmup {}, "
                     "learning rate {:g}, {} optimizer, precision {}; checkpoints in {}\n",
                     c.name, ir::enum_name(f.task), f.num_labels, device ? device->name() : "the CPU reference",
                     f.epochs, steps_per_epoch, t.steps, step_examples, t.warmup_steps, t.learning_rate,
                     passes::optimizer_name(t.optimizer), ir::enum_name(c.compile.precision), o.checkpoint_dir.string());
  // (every step's gradient is the mean of R x K batches: an epoch's last step short of them takes
  // the epoch's first batches again, as PyTorch's DistributedSampler pads a rank's share)
  if (const int64_t again = steps_per_epoch * per_step - batches_per_epoch; again > 0)
    log << fmt::format("finetune: an epoch's {} batches fill {} steps of {} micro-batches; its last step trains on {} "
                       "of the epoch's first batches again, so that every step averages {}\n",
                       batches_per_epoch, steps_per_epoch, per_step, again, per_step);
  if (dev && f.task != frontend::FinetuneTask::Regression) log << "finetune: " << f1_meaning(f) << "\n";
  // (labels are matched as written: two names in other letter case are two classes, said)
  const std::vector<std::string> names = f.label_names();
  for (size_t i = 0; i < names.size(); ++i)
    for (size_t j = i + 1; j < names.size(); ++j)
      if (data::equal_ignoring_case(names[i], names[j]))
        log << fmt::format("finetune: warning: [finetune] labels names '{}' and '{}', which differ in letter case "
                           "alone: two classes (labels are matched as written); if they are one, name it once and "
                           "write it one way in the files\n",
                           names[i], names[j]);

  // The optimizer averages the gradients of every rank's micro-batches.
  passes::OptimizerOptions optimizer = t;
  optimizer.gradient_accumulation_steps = per_step;
  Runners r;
  r.buckets = compile_buckets(model, c, optimizer);
  const passes::TrainingProgram& first = r.buckets.front().program;
  support::Environment env;
  // Rank 0 reads --init; the other ranks get its weights.
  if (leader && o.init) load_init(*o.init, first.step, vocab, c.train.do_lower_case, env, log);
  else if (!o.init) log << fmt::format("init: none: every param fresh from [train] seed {}\n", t.seed);
  run_folder::fresh_state(c, first, env);  // (what --init did not set)
  const run_folder::TensorManifest manifest = run_folder::manifest_of(first);
  DataParallel dp(comm, first, t);
  int64_t start = 0;  // (fine-tuning does not resume)
  dp.share_state(env, manifest, start);
  make_runners(o, r, device, log);
  std::string programs;
  const std::vector<data::TaskExample> no_examples;
  for (const Bucket& b : r.buckets) programs += ir::print(b.program.step) + ir::print(b.program.optimizer);
  dp.check_same_run(programs,
                    fmt::format("{} training examples, xxh3 {}; {} dev examples, xxh3 {}; vocabulary xxh3 {}",
                                train_data.examples.size(), data::task_examples_xxh3(train_data.examples),
                                dev ? dev->examples.size() : 0, data::task_examples_xxh3(dev ? dev->examples : no_examples),
                                vocab.xxh3()),
                    device ? device->name() : "the CPU reference");
  // (the sums between each step's last micro-batch and the optimizer, through host memory: the
  // buckets' step graphs share the accumulators, and no one graph holds the sums)
  if (dp.exchanges())
    log << fmt::format("data parallel: {}; gradients {} ({:.1f} MiB fp32 per step), summed over {} between the step and "
                       "the optimizer (staged through host memory); the dev set scored whole on every rank\n",
                       comm.describe(), ir::enum_name(t.gradient_compression),
                       static_cast<double>(dp.dense_bytes()) / (1 << 20), comm.engine());
  comm.set_timeout(t.rank_timeout);

  std::optional<MetricsFile> metrics;  // (rank 0's)
  if (leader) {
    folder_lock->writing();  // (a hard stop from here on leaves the folder: it holds the run's files)
    run_folder::start_metrics_afresh(o.metrics, log);
    metrics.emplace(o.metrics);
  }
  FinetuneSummary summary;
  const run_config::TaskMetric chosen = f.chosen_metric();
  std::optional<double> best;
  const data::LabelKind kind = format.kind;
  const bool scaling = first.step.find(names::kLossScale).has_value();
  int64_t step = 0;
  for (int64_t epoch = 1; epoch <= f.epochs && !summary.stopped_by_signal; ++epoch) {
    EpochResult result;
    result.epoch = epoch;
    double window = 0;
    int64_t window_steps = 0, window_examples = 0;
    auto window_began = Clock::now();
    const std::vector<data::PlannedBatch> plan =
        data::plan_batches(train_data.examples, lengths, t.batch_size, static_cast<uint64_t>(t.seed), epoch, true);
    for (int64_t s = 0; s < steps_per_epoch; ++s) {
      ++step;
      const double lr = learning_rate_at(t, step);
      env[std::string(names::kLearningRate)] = support::HostTensor::scalar(ir::DType::F32, lr);
      double loss = 0;  // the mean of this rank's micro-batches' losses, then of every rank's
      int64_t examples = 0, longest = 0;
      std::optional<reference::RunResult<float>> optimized;
      for (int64_t k = 0; k < K; ++k) {
        // The epoch's micro-batches dealt round the ranks, as pretraining deals them: R ranks of K
        // train on the batches (and dropout masks) one rank of R x K does, in the same steps.
        const int64_t dealt = (s * K + k) * R + comm.rank();
        const data::PlannedBatch& planned = plan[static_cast<size_t>(dealt % batches_per_epoch)];
        Bucket& bucket = r.buckets[planned.bucket];
        const data::TaskBatch batch =
            data::make_task_batch(examples_of(train_data, planned), kind, t.batch_size, bucket.seq_len);
        bind_task_batch(batch, kind, env);
        check_batch_ranges(env, c, fmt::format("{} line {}", o.train_data.string(), train_data.examples[planned.examples[0]].line));
        support::HostTensor seed = support::HostTensor::zeros({ir::DType::I64, {}});
        seed.integer[0] = dropout_seed(static_cast<uint64_t>(t.seed), (epoch - 1) * steps_per_epoch * per_step + dealt);
        env[std::string(names::kDropoutSeed)] = std::move(seed);
        reference::RunResult<float> out;
        // (one micro-batch and no sums between: on a device the step and the update as one graph)
        if (k == K - 1 && !dp.exchanges()) {
          auto both = run_together(*bucket.step, *r.optimizer, env);
          out = std::move(both.first);
          optimized = std::move(both.second);
        } else {
          out = bucket.step->run(env);
        }
        loss += out.outputs.at(0).real.at(0) / double(K);
        examples += batch.examples;
        longest = std::max(longest, bucket.seq_len);
      }
      if (R > 1) {  // (the step's figures are every rank's: the mean loss, the examples, the longest batch)
        double global[2] = {loss / double(R), static_cast<double>(examples)};
        comm.sum(global, 2, distributed::Element::F64);
        loss = global[0], examples = static_cast<int64_t>(global[1]);
        for (uint64_t v : comm.all_gather(static_cast<uint64_t>(longest), fmt::format("the batches of step {}", step)))
          longest = std::max(longest, static_cast<int64_t>(v));
      }
      if (!std::isfinite(loss))  // (at step 1, before any update: the starting weights, not the learning rate)
        throw run_folder::TrainError(fmt::format(
            "the loss is {} at step {} (epoch {}): {}", loss, step, epoch,
            step > 1 ? "lower [train] learning_rate"
            : o.init ? fmt::format("before any update, from the weights of {}: they hold values too large or not "
                                   "finite, or are not this model's; start from other weights",
                                   o.init->string())
                     : fmt::format("before any update, from freshly drawn weights: [model] initializer_range = {:g} "
                                   "makes them too large (BERT's is 0.02); lower it",
                                   c.model.initializer_range)));
      if (!optimized) {
        dp.before_optimizer(*r.optimizer, env, step);
        optimized = r.optimizer->run(env);
      }
      const double grad_norm = optimized->fetched.at(std::string(names::kGradNorm)).real.at(0);
      const distributed::ExchangeResult sent = dp.end_exchange(step, scaling, grad_norm);
      summary.losses.push_back(loss);
      result.train_loss += loss;
      window += loss, ++window_steps, window_examples += examples;
      nlohmann::json line = {{"step", step},         {"epoch", epoch},         {"loss", loss},
                             {"learning_rate", lr},  {"grad_norm", grad_norm}, {"seq_len", longest}};
      if (R > 1) line["ranks"] = R, line["allreduce_bytes"] = sent.bytes;
      if (metrics) metrics->write(line);
      if (step % t.log_every == 0 || step == t.steps) {
        const double seconds = std::chrono::duration<double>(Clock::now() - window_began).count();
        log << fmt::format("step {}/{} (epoch {}): loss {:.4f}, lr {:.2e}, grad norm {:.3f}, {:.1f} examples/s\n", step,
                           t.steps, epoch, window / double(window_steps), lr, grad_norm,
                           double(window_examples) / std::max(seconds, 1e-9));
        window = 0, window_steps = 0, window_examples = 0;
        window_began = Clock::now();
      }
      // A signal on any rank stops every rank after the same step.
      if (const int stop = dp.agreed_stop(run_folder::stop_requested(), step)) {
        summary.stopped_by_signal = stop;
        break;
      }
    }
    const int64_t steps_done = step - (epoch - 1) * steps_per_epoch;
    result.train_loss /= double(std::max<int64_t>(steps_done, 1));
    result.last_step = step;
    result.whole = steps_done == steps_per_epoch;
    r.optimizer->download_state(env);
    dp.check_same_parameters(env, manifest, step);
    // (every rank scores the whole dev set, and the same weights give every rank the same scores)
    if (dev && !summary.stopped_by_signal) {
      result.dev = evaluate_dev(c, r, *dev, env);
      const double value = metric_value(*result.dev, chosen);
      // (an undefined score, a correlation of one predicted value for every example, is never
      // the best: the model collapsed to a constant)
      result.best = std::isfinite(value) && (!best || value > *best);
      if (result.best) best = value;
      if (!std::isfinite(value))
        log << fmt::format("finetune: warning: epoch {}: {} is undefined: the model predicts one value for every dev "
                           "example (collapsed: a learning rate too high?); this epoch is not kept as the best\n",
                           epoch, ir::enum_name(chosen));
    }
    std::map<std::string, std::string> metadata = task_metadata(model, c, comm.size(), epoch, result.dev);
    metadata.merge(run_folder::export_metadata(c, vocab));
    // (Fine-tuning does not resume: a failed write's way on is another run.)
    const std::string again = fmt::format("fine-tune again into another --checkpoint-dir (fine-tuning does not "
                                          "resume; the checkpoints in {} are kept, each a starting point for --init)",
                                          o.checkpoint_dir.string());
    // (the most a run holds at once: its newest checkpoints and the best, and one more while the
    // oldest, or the old best, waits to go: the room a full disk's advice asks for)
    const int64_t room = std::min(t.keep_checkpoints, f.epochs) + 2;
    if (leader) run_folder::save_checkpoint(o.checkpoint_dir, step, manifest, env, metadata, t.keep_checkpoints, {}, again, room);
    if (result.best) {
      if (leader) run_folder::save_checkpoint(o.checkpoint_dir / "best", step, manifest, env, metadata, 1, {}, again, room);
      summary.best_checkpoint = run_folder::checkpoint_path(o.checkpoint_dir / "best", step);
    }
    nlohmann::json line = {{"epoch", epoch}, {"step", step}, {"train_loss", result.train_loss}};
    if (result.dev) line["dev"] = scores_json(*result.dev, f.task), line["best"] = result.best;
    if (metrics) metrics->write(line);
    log << fmt::format("epoch {}/{}: train loss {:.4f}{}; checkpoint {}\n", epoch, f.epochs, result.train_loss,
                       result.dev ? fmt::format("; dev {}{}", describe(*result.dev, f.task),
                                                result.best ? fmt::format(" (best {} so far)", ir::enum_name(chosen)) : "")
                                  : "",
                       run_folder::checkpoint_path(o.checkpoint_dir, step).string());
    summary.epochs.push_back(result);
  }
  // Every rank waits for rank 0's last checkpoint: a rank that ended first (exit 130/143) would get
  // a launcher (torchrun, srun) to kill the rest, rank 0 amid its write.
  if (R > 1) comm.meet("the last checkpoint");
  if (summary.stopped_by_signal)
    log << fmt::format("stopped by {} after step {}: its checkpoint is saved in {} (fine-tuning does not resume: start "
                       "again in another --checkpoint-dir, or from this checkpoint's encoder with --init {}, whose "
                       "task head starts fresh)\n",
                       run_folder::signal_name(summary.stopped_by_signal), step, o.checkpoint_dir.string(),
                       support::shell_word(run_folder::checkpoint_path(o.checkpoint_dir, step).string()));
  if (!summary.best_checkpoint.empty())
    log << fmt::format("best: {} {:.4f}: {}\n", ir::enum_name(chosen), *best, summary.best_checkpoint.string());
  // (every dev score undefined: a script reading best/ finds nothing; said at the end, where it looks)
  else if (dev && !summary.epochs.empty() && !summary.stopped_by_signal)
    log << fmt::format("finetune: warning: no epoch was kept as the best (every dev {} undefined: the model collapsed "
                       "to one prediction): {} holds nothing; lower learning_rate and fine-tune again\n",
                       ir::enum_name(chosen), (o.checkpoint_dir / "best").string());
  return summary;
}

}  // namespace bertc::train
