// bertc export: a checkpoint as a Hugging Face model folder that transformers' from_pretrained
// loads (config.json, model.safetensors with the params only, vocab.txt and the tokenizer's
// config), from what the checkpoint records (export_metadata in resume.h).
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <ostream>

#include "run_config/hf_config.h"

namespace bertc::run_folder {

struct ExportOptions {
  std::filesystem::path checkpoint, output;
  // The architecture to write; nullopt: the checkpoint's own (BertForPreTraining for pretraining,
  // BertFor...Classification for a fine-tuned one). Base: BertModel, the encoder and pooler only.
  std::optional<run_config::HfHead> head;
  // The vocabulary; nullopt: the file the checkpoint recorded (refused if changed since).
  std::optional<std::filesystem::path> vocab;
  // A signal that asks the export to stop (run_folder/stop_request.h), or 0: checked between files.
  std::function<int()> stop_requested;
};

// The export stopped on a signal: the folder it was making is removed, nothing is left.
class ExportStopped : public std::runtime_error {
 public:
  explicit ExportStopped(int signal) : std::runtime_error("stopped"), signal_(signal) {}
  int signal() const { return signal_; }

 private:
  int signal_;
};

// Writes the folder (refusing one that exists and is not empty); says what it wrote on `log`.
// Throws TrainError or SafetensorsError with the fix: a damaged checkpoint, one without the
// recorded model (from an older bertc), a custom model's, a head the checkpoint lacks, a missing
// or changed vocabulary.
void export_hf_folder(const ExportOptions& options, std::ostream& log);

}  // namespace bertc::run_folder
