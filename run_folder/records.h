// The records bertc writes in its files' metadata (checkpoints, batches), checked in one place
// against the forms bertc writes them in: a value in another form (an edit, with the checksum
// refitted, or damage) is refused as such by every command that reads it, bertc info included,
// never shown as a fact, compared, or advised back as a setting no flag takes.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/tensor_type.h"

namespace bertc::run_folder {

using Record = std::map<std::string, std::string>;

// Throws TrainError naming `checkpoint` when a value of its run record (run_metadata's keys, and
// world_size, gradient_accumulation_steps, schedule_steps) is not in the form bertc writes.
void check_run_metadata(const Record& saved, const std::filesystem::path& checkpoint);

// A checkpoint's head as a Hugging Face config.json gives it.
struct FineTunedHead {
  bool regression = false;
  int64_t num_labels = 2;           // the classifier's rows (a pretraining checkpoint's: transformers' default)
  std::vector<std::string> labels;  // their names in class order (none: numbered)
};

// The head of a checkpoint whose record is `meta` and whose classifier.weight has `classifier`'s
// shape (none: it holds no such tensor): a pretraining checkpoint's default when the record names
// no fine-tuning task; else the classes from the classifier's rows, and the records of them
// (finetune_task, num_labels, labels) checked against those rows. Throws TrainError naming `path`
// for a task bertc does not write, a fine-tuned checkpoint without a classifier, or a record that
// contradicts the rows (num_labels 3 on 2 rows exported a folder its own weights contradict).
FineTunedHead fine_tuned_head(const Record& meta, const std::optional<ir::Shape>& classifier, const std::string& path);

// Every record of a checkpoint that bertc writes, checked: its step (1 or more), its run record
// (check_run_metadata), a fine-tuned one's epoch and head (fine_tuned_head), its vocabulary's
// record (check_vocab_record), its do_lower_case. Throws TrainError (or SafetensorsError) naming `path`.
void check_checkpoint_record(const Record& meta, const std::optional<ir::Shape>& classifier, const std::string& path);

// A batch's record (bertc batch): its task, do_lower_case and vocabulary's record. Throws naming `path`.
void check_batch_record(const Record& meta, const std::string& path);

// The vocabulary's record (data::vocab_metadata's keys): vocab_xxh3 16 hexadecimal digits,
// vocab_tokens a count. Throws TrainError naming `path`.
void check_vocab_record(const Record& meta, const std::string& path);

}  // namespace bertc::run_folder
