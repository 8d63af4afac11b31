// The records bertc writes in its files' metadata, checked (see records.h).
#include "run_folder/records.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "run_config/config.h"
#include "ir/enum_names.h"
#include "passes/options.h"
#include "support/options.h"
#include "support/safetensors.h"
#include "run_folder/train_error.h"

namespace bertc::run_folder {
namespace {

// A whole number of 0 or more written as bertc writes it, or nullopt (support's reading of an
// integer option's text: the whole text, no sign but '-').
std::optional<int64_t> whole_number(const std::string& text) {
  const std::optional<support::OptionValue> v = support::value_from_text(support::ValueKind::Int, text);
  if (!v || std::get<int64_t>(*v) < 0) return std::nullopt;
  return std::get<int64_t>(*v);
}

[[noreturn]] void damaged(const std::string& path, const std::string& key, const std::string& value, const char* form) {
  throw TrainError(fmt::format("{}: its metadata says {} = '{}', which is not {} as bertc writes it: the file is "
                               "damaged or was edited",
                               path, key, value, form));
}

// The forms run-record values take, as bertc writes them.
enum class RecordForm { Text, Count, Whole, Switch, Optimizer, Precision };

// Why `value` is not of `form`, or nullopt when it is.
std::optional<std::string> form_problem(RecordForm form, const std::string& value) {
  const std::optional<int64_t> number = whole_number(value);
  const bool whole = number.has_value();
  switch (form) {
    case RecordForm::Text:
      if (!value.empty()) return std::nullopt;
      return "a name";
    case RecordForm::Count:
      if (whole && *number >= 1) return std::nullopt;
      return "a count (1 or more)";
    case RecordForm::Whole:
      if (whole) return std::nullopt;
      return "a whole number (0 or more)";
    case RecordForm::Switch:
      if (value == "on" || value == "off") return std::nullopt;
      return "on or off";
    case RecordForm::Optimizer: {
      passes::OptimizerOp op;
      if (!support::OptionType<passes::OptimizerOp>::from_value(value, op)) return std::nullopt;
      return fmt::format("an optimizer ({})", fmt::join(support::OptionType<passes::OptimizerOp>::choices(), ", "));
    }
    case RecordForm::Precision: {
      const auto p = ir::enum_from_name<passes::Precision>(value);
      if (p && *p != passes::Precision::Auto) return std::nullopt;
      return "a precision (fp32, bf16, ...)";
    }
  }
  return "?";
}

}  // namespace

void check_run_metadata(const Record& saved, const std::filesystem::path& checkpoint) {
  static const std::map<std::string, RecordForm> forms = {
      {"model", RecordForm::Text},        {"config", RecordForm::Text},
      {"optimizer", RecordForm::Optimizer}, {"seed", RecordForm::Whole},
      {"batch_size", RecordForm::Count},  {"seq_len", RecordForm::Count},
      {"max_predictions_per_seq", RecordForm::Whole}, {"global_batch", RecordForm::Count},
      {"precision", RecordForm::Precision}, {"dropout", RecordForm::Switch},
      {"world_size", RecordForm::Count},  {"gradient_accumulation_steps", RecordForm::Count},
      {"schedule_steps", RecordForm::Count}};
  for (const auto& [key, form] : forms)
    if (const auto it = saved.find(key); it != saved.end())
      if (const auto problem = form_problem(form, it->second))
        throw TrainError(fmt::format("{}: its metadata says {} = '{}', which is not {} as bertc writes it: the file is "
                                     "damaged or was edited (a run resuming from it goes on from the one before once "
                                     "it is moved aside)",
                                     checkpoint.string(), key, it->second, *problem));
}

FineTunedHead fine_tuned_head(const Record& meta, const std::optional<ir::Shape>& classifier, const std::string& path) {
  FineTunedHead h;
  const auto task = meta.find("finetune_task");
  if (task == meta.end()) return h;
  auto damaged = [&](const std::string& what, const std::string& restore) {
    return TrainError(fmt::format("{}: {}: the record was edited or damaged; {}, as bertc finetune wrote it",
                                  path, what, restore));
  };
  using frontend::FinetuneTask;
  const auto parsed = ir::enum_from_name<FinetuneTask>(task->second);
  if (!parsed)
    throw damaged(fmt::format("its metadata says finetune_task = '{}', which is not {}", task->second,
                              ir::enum_choice_list<FinetuneTask>()),
                  "write the task it was fine-tuned for");
  if (!classifier || classifier->size() != 2)
    throw TrainError(fmt::format("{}: its metadata says it is fine-tuned ({}), and it holds no classifier.weight of "
                                 "[classes, hidden]: export a checkpoint bertc finetune wrote",
                                 path, task->second));
  const int64_t rows = (*classifier)[0];
  h.regression = *parsed == FinetuneTask::Regression;
  h.num_labels = rows;
  if (h.regression != (rows == 1))
    throw damaged(fmt::format("its metadata says finetune_task = '{}', and its classifier has {} row(s) ({})",
                              task->second, rows, h.regression ? "a regression predicts one number" : "one row is a regression's"),
                  fmt::format("write finetune_task = {}", h.regression ? "sequence-classification or token-classification"
                                                                       : "regression"));
  if (const auto n = meta.find("num_labels"); n != meta.end() && n->second != std::to_string(rows))
    throw damaged(fmt::format("its metadata says num_labels = '{}', and its classifier has {} rows", n->second, rows),
                  fmt::format("write num_labels = {}", rows));
  if (const auto l = meta.find("labels"); l != meta.end() && !l->second.empty()) {
    run_config::FinetuneConfig f;
    f.labels = l->second;
    h.labels = f.label_names();
    if (h.regression || static_cast<int64_t>(h.labels.size()) != rows)
      throw damaged(fmt::format("its metadata's labels '{}' name {} classes, and its classifier has {} {}", l->second,
                                h.labels.size(), rows, h.regression ? "row (a regression's, which names none)" : "rows"),
                    h.regression ? std::string("write labels = \"\"") : fmt::format("name its {} classes in labels", rows));
    // (a name twice, or none, as bertc finetune refuses them: export wrote a label2id losing a class)
    for (size_t i = 0; i < h.labels.size(); ++i)
      if (h.labels[i].empty() || std::find(h.labels.begin(), h.labels.begin() + i, h.labels[i]) != h.labels.begin() + i)
        throw damaged(fmt::format("its metadata's labels '{}' {}", l->second,
                                  h.labels[i].empty() ? fmt::format("leave class {} unnamed", i)
                                                      : fmt::format("name '{}' twice", h.labels[i])),
                      fmt::format("name its {} classes in labels, each once", rows));
  }
  return h;
}



void check_vocab_record(const Record& meta, const std::string& path) {
  if (const auto hash = meta.find("vocab_xxh3"); hash != meta.end() && !hash->second.empty())
    if (hash->second.size() != 16 || hash->second.find_first_not_of("0123456789abcdef") != std::string::npos)
      damaged(path, "vocab_xxh3", hash->second, "16 hexadecimal digits");
  if (const auto tokens = meta.find("vocab_tokens"); tokens != meta.end()) {
    const auto n = whole_number(tokens->second);
    if (!n || *n < 1) damaged(path, "vocab_tokens", tokens->second, "a count (1 or more)");
  }
}

void check_checkpoint_record(const Record& meta, const std::optional<ir::Shape>& classifier, const std::string& path) {
  if (const auto step = meta.find("step"); step != meta.end()) {
    const auto n = whole_number(step->second);
    if (!n || *n < 1) damaged(path, "step", step->second, "a step (1 or more)");
  }
  if (const auto epoch = meta.find("epoch"); epoch != meta.end() && !whole_number(epoch->second))
    damaged(path, "epoch", epoch->second, "a whole number (0 or more)");
  check_run_metadata(meta, path);
  fine_tuned_head(meta, classifier, path);
  check_vocab_record(meta, path);
  support::metadata_flag(meta, "do_lower_case", path);
}

void check_batch_record(const Record& meta, const std::string& path) {
  if (const auto task = meta.find("finetune_task");
      task != meta.end() && !ir::enum_from_name<frontend::FinetuneTask>(task->second))
    damaged(path, "finetune_task", task->second, "a fine-tuning task");
  check_vocab_record(meta, path);
  support::metadata_flag(meta, "do_lower_case", path);
}

}  // namespace bertc::run_folder
