// The dev-set figures of a fine-tuning run: accuracy, F1 and Matthews correlation of classes (or
// token tags), Pearson and Spearman correlation of regression targets, as GLUE reports them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "run_config/config.h"

namespace bertc::train {

struct TaskScores {
  int64_t count = 0;  // examples (or tagged words) scored
  double loss = 0;    // the mean loss over them
  // Classes: accuracy; F1 of class 1 with two classes (the positive class, as GLUE's MRPC and
  // QQP count it), else the mean F1 over the classes present (macro); Matthews correlation
  // (Gorodkin's R_K for more than two classes). Token tags: accuracy and Matthews per tagged word;
  // F1 of the entities where the tags name them (entity_f1: what seqeval and conlleval report for
  // NER), else the mean F1 over the tags present other than "O" (f1_meaning says which).
  double accuracy = 0, f1 = 0, mcc = 0;
  // Regression: correlations and mean squared error.
  double pearson = 0, spearman = 0, mse = 0;
};

// `left_out`: a class the macro F1 of more than two classes passes over (token tags' "O"), or -1.
TaskScores classification_scores(const std::vector<int32_t>& truth, const std::vector<int32_t>& predicted,
                                 int64_t classes, int32_t left_out = -1);

// Whether token tags named `names` name entities: every name "O" or "B-", "I-", "E-" or "S-" and a
// type (IOB1, IOB2, IOBES; the letters in either case), at least one of them not "O".
bool is_outside(const std::string& name);  // "O" or "o": the tag of words in no entity
bool tags_name_entities(const std::vector<std::string>& names);
// The F1 of entities (conlleval's chunks: an entity begins at B-/S-, or at I-/E- after a tag of
// another type or an O, E- or S-, and runs over the I-/E- of its type that follow; an entity counts
// as found where the prediction has one of the same type over the same words), micro over every
// entity of every sentence; 0 when neither side has one. One tag list per sentence, of its tagged
// words; `names`: every tag's name (tags_name_entities).
double entity_f1(const std::vector<std::vector<int32_t>>& truth, const std::vector<std::vector<int32_t>>& predicted,
                 const std::vector<std::string>& names);
// What the run's f1 is, for its first lines: "f1 is ...".
std::string f1_meaning(const run_config::FinetuneConfig& finetune);
TaskScores regression_scores(const std::vector<float>& truth, const std::vector<float>& predicted);

// The figure `metric` names (not Auto).
double metric_value(const TaskScores& scores, run_config::TaskMetric metric);

// "accuracy 0.8125 f1 0.8000 mcc 0.6250" (or the regression figures) for progress lines.
std::string describe(const TaskScores& scores, frontend::FinetuneTask task);

}  // namespace bertc::train
