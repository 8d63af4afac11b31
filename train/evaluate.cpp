// bertc eval: losses and gradients on one batch with the reference executor.
#include "train/evaluate.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "data/task_data.h"
#include "data/vocab_identity.h"
#include "run_config/hf_config.h"

#include "ir/value_names.h"
#include "passes/autodiff.h"
#include "train/batches.h"
#include "run_folder/checkpoint.h"
#include "run_folder/records.h"
#include "run_folder/resume.h"
#include "reference/executor.h"
#include "support/safetensors.h"
#include "support/shell_word.h"

namespace bertc::train {
namespace {

const support::StoredTensor& batch_tensor(const support::Safetensors& file, const std::string& name, const std::string& source) {
  auto it = file.tensors.find(name);
  // (a pretraining batch under a [finetune] config, or a task batch under a pretraining one: said)
  if (it == file.tensors.end() && name == "labels" && file.tensors.count("masked_lm_positions"))
    throw support::SafetensorsError(fmt::format("{}: a pretraining batch (masked_lm_positions, next_sentence_labels), "
                                                "and the config's [finetune] task reads a task batch: make one with "
                                                "bertc batch FINETUNE_CONFIG --data EXAMPLES -o BATCH.safetensors",
                                                source));
  if (it == file.tensors.end() && name == "masked_lm_positions" && file.tensors.count("labels"))
    throw support::SafetensorsError(fmt::format("{}: a task batch (labels), and the config has no [finetune] "
                                                "section: evaluate it with the fine-tuning config it was made with",
                                                source));
  if (it == file.tensors.end())
    throw support::SafetensorsError(fmt::format("{}: the batch has no tensor '{}' (the model reads input_ids, "
                                                "token_type_ids, attention_mask and, for pretraining, "
                                                "masked_lm_positions, masked_lm_ids, masked_lm_weights, "
                                                "next_sentence_labels; for a [finetune] config labels and "
                                                "label_weights)",
                                                source, name));
  return it->second;
}

// What fine-tuned weights or a task batch record of their task and classes (empty: nothing
// recorded): a bertc checkpoint's or batch's finetune_task and labels, else a Hugging Face
// folder's config.json (architecture, problem_type, id2label).
struct TaskRecord {
  std::string task;                 // "sequence-classification", "regression", "token-classification"
  std::vector<std::string> labels;  // the class names in class order
  int64_t classes = 0;              // how many classes it says there are (0: not said)
  std::string unsupported;          // a head no bertc task computes ("a BertForMultipleChoice")
  bool numbers_recorded = true;     // no labels means class numbers (a file before bertc recorded them: unknown)
};

TaskRecord recorded_task(const std::map<std::string, std::string>& metadata) {
  TaskRecord r;
  if (const auto t = metadata.find("finetune_task"); t != metadata.end()) r.task = t->second;
  r.numbers_recorded = metadata.count("labels") > 0;
  if (const auto l = metadata.find("labels"); l != metadata.end() && !l->second.empty()) {
    run_config::FinetuneConfig f;
    f.labels = l->second;
    r.labels = f.label_names();
    r.classes = static_cast<int64_t>(r.labels.size());
  }
  return r;
}

// `loaded_classes`: the rows of the classifier the weights loaded with (0: not loaded yet). What
// the head computes follows from its outputs where config.json's problem_type leaves it open
// (transformers' rule: one output and no problem_type is a regression); before loading, only what
// does not hang on them is said. `classes` is what config.json claims (checked against the rows).
TaskRecord weights_task(const std::filesystem::path& weights, const std::map<std::string, std::string>& metadata,
                        int64_t loaded_classes) {
  if (metadata.count("finetune_task")) return recorded_task(metadata);
  const run_config::HfHeadRecord hf = run_config::hf_head_record(weights);
  TaskRecord r;
  r.labels = hf.labels, r.classes = hf.classes;
  using frontend::FinetuneTask;
  const std::string& problem = hf.problem_type;
  const int64_t outputs = loaded_classes;
  if (hf.architecture == "BertForTokenClassification") {
    r.task = ir::enum_name(FinetuneTask::TokenClassification);
  } else if (hf.architecture == "BertForSequenceClassification") {
    if (!problem.empty() && problem != "regression" && problem != "single_label_classification")
      r.unsupported = fmt::format("a BertForSequenceClassification of problem_type \"{}\"", problem);
    else if (outputs == 0 && problem == "regression" && hf.classes > 1)
      r.unsupported = fmt::format("a BertForSequenceClassification regressing {} numbers", hf.classes);
    else if (outputs == 0)  // (before loading: the problem_type it declares; else its classifier's rows
                            // will say, which its config.json's classes may contradict)
      r.task = problem == "regression"                  ? ir::enum_name(FinetuneTask::Regression)
               : problem == "single_label_classification" ? ir::enum_name(FinetuneTask::SequenceClassification)
                                                          : "";
    else if (problem == "regression" && outputs > 1)
      r.unsupported = fmt::format("a BertForSequenceClassification regressing {} numbers", outputs);
    else if (problem == "single_label_classification" && outputs == 1)
      r.unsupported = "a one-class BertForSequenceClassification";
    else
      r.task = ir::enum_name(outputs == 1 ? FinetuneTask::Regression : FinetuneTask::SequenceClassification);
  } else if (!hf.architecture.empty() && hf.architecture != "BertForPreTraining" && hf.architecture != "BertModel") {
    r.unsupported = fmt::format("a {}", hf.architecture);
  }
  if (r.task == ir::enum_name(FinetuneTask::Regression)) r.labels.clear();  // (its output's name is no class)
  return r;
}

// A fine-tuning config's task against what `what` records: another task's head would be scored
// against targets it never meant (a loss, exit 0).
void require_same_task(const run_config::Config& config, const TaskRecord& recorded, const std::string& what,
                       const std::string& fix) {
  if (!recorded.unsupported.empty())
    throw support::SafetensorsError(fmt::format("{} holds {} (its config.json), a head no bertc [finetune] task "
                                                "computes (sequence-classification, regression, token-classification): "
                                                "evaluate it with the library it was made for",
                                                what, recorded.unsupported));
  const std::string task(ir::enum_name(config.finetune.task));
  if (!recorded.task.empty() && recorded.task != task)
    throw support::SafetensorsError(fmt::format("{} records the task {}, and the config's [finetune] task is {}: {}", what,
                                                recorded.task, task, fix));
}

// Why two records' classes do not agree: another order or names, or names that differ in letter
// case alone (matched as written: "Fits" is not "fits").
std::string classes_differ(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  bool case_only = a.size() == b.size();
  for (size_t i = 0; case_only && i < a.size(); ++i) case_only = data::equal_ignoring_case(a[i], b[i]);
  return case_only ? "the names differ in letter case alone, and labels are matched as written"
                   : "each class number would name another class";
}

// A side's class names to compare with the other's: a side that names none is read as class
// numbers "0".."n-1" where the other names a numeral at another position than its number, as class
// number k can then mean the numeral k alone (labels "1,0" against plain class numbers scored every example against the other class,
// without a word); against names that are words, class numbers are positions, unchecked.
std::vector<std::string> compared_names(const std::vector<std::string>& names, bool numbers_recorded,
                                        const std::vector<std::string>& other) {
  const auto numeral = [](const std::string& n) {
    return !n.empty() && std::all_of(n.begin(), n.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  };
  // (only where a numeral of the other's sits elsewhere than at its own number: "1,0,neutral" as
  // much as "1,0"; "0,1,neutral" agrees with class numbers wherever they can be compared)
  bool misplaced = false;
  for (size_t k = 0; k < other.size(); ++k) misplaced |= numeral(other[k]) && other[k] != std::to_string(k);
  if (!names.empty() || !numbers_recorded || !misplaced) return names;
  std::vector<std::string> numbers;
  for (size_t k = 0; k < other.size(); ++k) numbers.push_back(std::to_string(k));
  return numbers;
}

// The same, then its classes: their number and, where both name them, their order.
void require_config_task(const run_config::Config& config, const TaskRecord& recorded, const std::string& what,
                         const std::string& fix) {
  require_same_task(config, recorded, what, fix);
  if (recorded.classes > 0 && recorded.classes != config.finetune.num_labels)
    throw support::SafetensorsError(fmt::format("{} names {} classes{}, and the config {} ([finetune] num_labels): {}",
                                                what, recorded.classes,
                                                recorded.labels.empty() ? "" : fmt::format(" ({})", fmt::join(recorded.labels, ",")),
                                                config.finetune.num_labels, fix));
  const std::vector<std::string> named = config.finetune.label_names();
  const std::vector<std::string> labels = compared_names(named, true, recorded.labels);
  const std::vector<std::string> theirs = compared_names(recorded.labels, recorded.numbers_recorded, named);
  if (!labels.empty() && !theirs.empty() && labels != theirs)
    throw support::SafetensorsError(fmt::format("{} has the classes \"{}\" in that order, and the config's [finetune] "
                                                "labels are \"{}\"{}: {}; {}",
                                                what, fmt::join(theirs, ","), fmt::join(labels, ","),
                                                named.empty() ? " (it names none: class numbers)" : "",
                                                classes_differ(theirs, labels), fix));
}

// `names` as a TOML basic string's text: a quote or backslash in a name escaped, so that the line
// advised reads back as the names (a name "no\way" was advised raw, and refused as TOML).
std::string toml_names(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) out += ',';
    for (const char c : names[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
  }
  return out;
}

// What weights of another task or classes are told to do.
std::string weights_fix(const TaskRecord& held) {
  // (a comma parts [finetune] labels' names: "labels = \"a,b,c\"" for the classes 'a,b' and 'c' was
  // three classes, refused again with the same advice)
  std::vector<std::string> with_comma;
  for (const std::string& name : held.labels)
    if (name.find(',') != std::string::npos) with_comma.push_back(fmt::format("'{}'", name));
  if (!with_comma.empty())
    return fmt::format("its class name{} {} hold{} a comma, which parts the names of [finetune] labels, so no config "
                       "can name {}: rename {} in its config.json's id2label and label2id, then evaluate it with a "
                       "config of its task and those classes",
                       with_comma.size() == 1 ? "" : "s", fmt::join(with_comma, ", "),
                       with_comma.size() == 1 ? "s" : "", with_comma.size() == 1 ? "it" : "them",
                       with_comma.size() == 1 ? "it" : "them");
  return fmt::format("evaluate it with a config of its task and classes{}{}, and a batch made with that config (bertc "
                     "batch CONFIG --data EXAMPLES -o BATCH.safetensors)",
                     held.task.empty() ? "" : fmt::format(" (task = \"{}\"", held.task),
                     held.task.empty()     ? ""
                     : held.labels.empty() ? ")"
                                           : fmt::format(", labels = \"{}\")", toml_names(held.labels)));
}

// Before the weights load (their shapes' mismatch would be said instead): the task and classes they
// record.
void require_weights_task(const run_config::Config& config, const std::filesystem::path& weights) {
  std::map<std::string, std::string> metadata;
  std::error_code ec;
  if (std::filesystem::is_regular_file(weights, ec) && weights.extension() == ".safetensors") {
    try {
      metadata = support::read_safetensors_metadata(weights);
    } catch (const std::exception&) {  // (a damaged file: its loading says what is wrong)
    }
  }
  const std::string init = fmt::format("--init {}", weights.string());
  // (and the classes a bertc checkpoint records beside its weights: a count that differs was said as
  // the classifier's shapes)
  if (metadata.count("finetune_task")) {
    // (a record bertc never writes, a regression of 2 classes, was advised back as a config that
    // every check then refused)
    if (run_folder::is_checkpoint_record(metadata))
      run_folder::check_checkpoint_record(metadata, support::read_safetensors_shape(weights, "classifier.weight"), weights.string());
    const TaskRecord recorded = weights_task(weights, metadata, 0);
    require_config_task(config, recorded, init, weights_fix(recorded));
    return;
  }
  // A folder's (or file's) classifier rows, read from the header: its classes and task as loading
  // them would find them, before their shapes are said instead.
  int64_t rows = 0;
  try {
    const std::vector<std::filesystem::path> files =
        run_config::is_hf_folder(weights) ? run_folder::hf_weight_files(weights) : std::vector<std::filesystem::path>{weights};
    for (const std::filesystem::path& f : files)
      if (const auto shape = support::read_safetensors_shape(f, "classifier.weight"); shape && !shape->empty())
        rows = (*shape)[0];
  } catch (const std::exception&) {  // (a damaged or missing file: its loading says what is wrong)
  }
  TaskRecord held = weights_task(weights, metadata, rows);
  if (rows > 0 && held.unsupported.empty() && held.classes > 0 && held.classes != rows)
    throw support::SafetensorsError(fmt::format("{}: its config.json names {} classes, and its classifier has {}: the "
                                                "config.json contradicts the weights; correct its id2label (and "
                                                "num_labels)",
                                                init, held.classes, rows));
  if (rows > 0 && held.classes == 0 && held.task != ir::enum_name(frontend::FinetuneTask::Regression)) held.classes = rows;
  require_config_task(config, held, init, weights_fix(held));
}

// After: the classes of the weights loaded (the config's num_labels rows) against their record,
// the config's and the batch's.
void require_weights_classes(const run_config::Config& config, const std::filesystem::path& weights,
                             const std::map<std::string, std::string>& metadata, const TaskRecord& made,
                             const std::string& source) {
  const TaskRecord held = weights_task(weights, metadata, config.finetune.num_labels);
  const std::string init = fmt::format("--init {}", weights.string());
  if (held.unsupported.empty() && held.classes > 0 && held.classes != config.finetune.num_labels)
    throw support::SafetensorsError(fmt::format("{}: its config.json names {} classes, and its classifier has {}: the "
                                                "config.json contradicts the weights; correct its id2label (and "
                                                "num_labels)",
                                                init, held.classes, config.finetune.num_labels));
  require_config_task(config, held, init, weights_fix(held));
  // (a config of class numbers checks neither against names: the two records, against each other)
  const std::vector<std::string> batch_names = compared_names(made.labels, made.numbers_recorded, held.labels);
  const std::vector<std::string> weights_names = compared_names(held.labels, held.numbers_recorded, made.labels);
  if (!weights_names.empty() && !batch_names.empty() && weights_names != batch_names)
    throw support::SafetensorsError(fmt::format(
        "the batch {} has the classes \"{}\" in that order, and {} the classes \"{}\": {}; make the batch with a "
        "config of labels = \"{}\" (bertc batch CONFIG --data EXAMPLES -o {})",
        source, fmt::join(batch_names, ","), init, fmt::join(weights_names, ","),
        classes_differ(batch_names, weights_names), toml_names(weights_names), source));
}

}  // namespace

EvalResult evaluate_batch(const frontend::ModelDefinition& model, run_config::Config config,
                          const std::filesystem::path& weights, const std::filesystem::path& batch_path) {
  const support::Safetensors batch = support::read_safetensors(batch_path);
  const std::string source = batch_path.string();
  if (batch.metadata.count("format") && batch.metadata.at("format") == "bertc-batch") run_folder::check_batch_record(batch.metadata, source);
  if (config.finetune_section)  // (what its label numbers mean, where bertc batch recorded it)
    require_config_task(config, recorded_task(batch.metadata), fmt::format("the batch {}", source),
                        fmt::format("make the batch with this config (bertc batch CONFIG --data EXAMPLES -o {})", source));
  const ir::Shape ids = batch_tensor(batch, "input_ids", source).shape;
  if (ids.size() != 2)
    throw support::SafetensorsError(fmt::format("{}: input_ids must be [batch, seq], found {}", source,
                                                ir::shape_string(ids)));
  // A batch longer than the model's positions: said of the batch, whose length eval takes.
  if (ids[1] > config.model.max_position_embeddings)
    throw support::SafetensorsError(fmt::format(
        "{}: input_ids is [{}, {}], longer than the model's max_position_embeddings = {}: make the batch from a config "
        "with seq_len = {} or less (bertc batch CONFIG -o FILE)",
        source, ids[0], ids[1], config.model.max_position_embeddings, config.model.max_position_embeddings));
  // (a loss over no example is 0, read as a perfect model)
  if (ids[0] == 0 || ids[1] == 0)
    throw support::SafetensorsError(fmt::format("{}: input_ids is {}: the batch holds {}, and a loss needs one at least: "
                                                "make the batch again (bertc batch CONFIG -o FILE)",
                                                source, ir::shape_string(ids),
                                                ids[0] == 0 ? "no example" : "examples of no token"));
  config.train.batch_size = ids[0];
  config.train.seq_len = ids[1];
  if (!config.finetune_section) {  // (a fine-tuning graph has no masked predictions)
    const ir::Shape positions = batch_tensor(batch, "masked_lm_positions", source).shape;
    if (positions.size() != 2)
      throw support::SafetensorsError(fmt::format("{}: masked_lm_positions must be [batch, predictions], found {}",
                                                  source, ir::shape_string(positions)));
    config.train.max_predictions_per_seq = positions[1];
    // A batch of rows of several examples (bertc batch of a config with packing = "pack") is
    // evaluated as such, whatever the config's packing: the file says which it is.
    config.train.packing = run_config::Packing::None;
    if (batch.tensors.count("example_ids")) {
      const ir::Shape cls = batch_tensor(batch, "cls_positions", source).shape;
      if (cls.size() != 2 || cls[1] < 1)
        throw support::SafetensorsError(fmt::format("{}: cls_positions must be [batch, examples a row], found {}",
                                                    source, ir::shape_string(cls)));
      config.train.packing = run_config::Packing::Pack;
      config.train.packing_max_examples = cls[1];
    }
  }
  config.compile.dropout = false;
  config.finetune.seq_len_buckets.clear();  // (the batch's length is the one compiled shape)
  run_config::validate(config);

  frontend::ModelSettings settings = config.model_settings();
  settings.batch.max_predictions_per_seq = config.train.max_predictions_per_seq;  // (the file's, rows or not)
  ir::Graph graph = frontend::build_model(model, settings);
  passes::differentiate(graph);
  support::Environment env;
  for (ir::ValueId v : graph.values_of(ir::OpKind::Input)) {
    const ir::Value& input = graph.value(v);
    const support::StoredTensor& stored = batch_tensor(batch, input.name, source);
    if (stored.shape != input.type.shape)
      throw support::SafetensorsError(fmt::format("{}: tensor '{}' is {}, the model needs {} for this batch", source, input.name,
                                         ir::shape_string(stored.shape), to_string(input.type)));
    env[input.name] = support::to_host(stored, input.type.dtype, fmt::format("{}: tensor '{}'", source, input.name));
  }
  check_batch_ranges(env, config, source);
  if (config.finetune_section) require_weights_task(config, weights);
  const run_folder::PretrainedReport loaded = run_folder::load_pretrained(weights, graph, env);
  if (config.finetune_section)  // (what the head's outputs mean, where the weights record it)
    require_weights_classes(config, weights, loaded.metadata, recorded_task(batch.metadata), source);
  // The batch's token ids are of the vocabulary it was made with: the weights' must be it.
  if (const auto made_with = data::vocab_from_metadata(batch.metadata)) {
    std::optional<data::VocabRecord> weights_vocab = data::vocab_from_metadata(loaded.metadata);
    if (run_config::is_hf_folder(weights)) weights_vocab = data::record_of(run_folder::hf_folder_vocab(weights, loaded.metadata));
    if (weights_vocab)
      data::require_same_vocab(*made_with, *weights_vocab, fmt::format("--init {}", weights.string()),
                               fmt::format("make the batch with the weights' vocabulary (bertc batch CONFIG --vocab "
                                           "FILE -o {})",
                                           source));
  }
  // ...and its text lower-cased as theirs was (else its words are other tokens, or [UNK]).
  if (const std::optional<bool> made = support::metadata_flag(batch.metadata, "do_lower_case", source))
    if (const std::optional<bool> trained = run_folder::weights_lower_case(weights, loaded.metadata); trained && *trained != *made)
      throw support::SafetensorsError(fmt::format(
          "{}: made with do_lower_case = {}, and the weights at {} were trained with do_lower_case = {}: the same text "
          "makes other tokens; make the batch with [train] do_lower_case = {} in its config (bertc batch CONFIG --data "
          "EXAMPLES -o {})",
          source, *made, weights.string(), *trained, *trained, source));
  if (!loaded.missing.empty()) {
    // (a fine-tuned model's heads are its task's: said, with the config that has them)
    // (and a pretraining model's heads are not a task's: said, with how to make the task's)
    // (a checkpoint's record, or a Hugging Face folder's config.json: the folder exported from it)
    const TaskRecord held = weights_task(weights, loaded.metadata, 0);
    // (a folder's task head by its architecture, where its outputs would tell which task it is)
    const bool recorded = loaded.metadata.count("finetune_task") > 0;  // (bertc's fine-tuned checkpoint)
    const std::string architecture = recorded ? "" : run_config::hf_head_record(weights).architecture;
    const std::string head = recorded ? fmt::format("a model fine-tuned for {}", held.task)
                             : architecture == "BertForSequenceClassification" ||
                                     architecture == "BertForTokenClassification"
                                 ? fmt::format("a {}", architecture)
                                 : "";
    const bool task_head_missing =
        config.finetune_section && std::all_of(loaded.missing.begin(), loaded.missing.end(), [](const std::string& n) {
          return n.starts_with("classifier.") || n.starts_with("bert.pooler.");
        });
    std::string why;
    if (!head.empty() && !config.finetune_section)
      why = fmt::format(" (it holds {}, whose head is not pretraining's: evaluate it with a config of that task's "
                        "[finetune] section and a batch of its examples, bertc batch FINETUNE_CONFIG --data EXAMPLES "
                        "-o BATCH.safetensors)",
                        head);
    else if (head.empty() && task_head_missing)
      why = fmt::format(" (it holds no {} head: a pretraining model's or a base model's weights; fine-tune them "
                        "first, bertc finetune CONFIG --init {}, and evaluate the fine-tuned checkpoint)",
                        ir::enum_name(config.finetune.task), support::shell_word(weights.string()));
    throw support::SafetensorsError(fmt::format("{}: {} params are missing: {}{}", weights.string(),
                                                loaded.missing.size(), fmt::join(loaded.missing, ", "), why));
  }
  std::vector<std::string> losses;  // besides loss: the pretraining graph's two
  for (std::string_view name : {ir::names::kMlmLoss, ir::names::kNspLoss})
    if (graph.find(name)) losses.emplace_back(name);
  std::vector<std::string> logits;
  for (std::string_view name : {ir::names::kLogits, ir::names::kMlmLogits, ir::names::kNspLogits})
    if (graph.find(name)) logits.emplace_back(name);
  std::vector<std::string> fetch = losses;
  fetch.insert(fetch.end(), logits.begin(), logits.end());
  for (ir::ValueId p : graph.values_of(ir::OpKind::Param)) fetch.push_back(ir::names::grad_of(graph.value(p).name));
  const auto r = reference::Executor<float>(graph).run(env, fetch);
  EvalResult out;
  out.vocab = data::vocab_from_metadata(batch.metadata);
  out.notes = run_folder::init_notes(loaded);
  for (const std::string& name : losses) out.losses.emplace_back(name, r.fetched.at(name).real.at(0));
  out.losses.emplace_back(ir::names::kLoss, r.outputs.at(0).real.at(0));
  for (const std::string& name : logits) out.logits[name] = r.fetched.at(name);
  for (ir::ValueId p : graph.values_of(ir::OpKind::Param)) {
    const std::string& name = graph.value(p).name;
    out.gradients[name] = r.fetched.at(ir::names::grad_of(name));
  }
  return out;
}

}  // namespace bertc::train
