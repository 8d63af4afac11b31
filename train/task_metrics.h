// The dev-set figures of a fine-tuning run: accuracy, F1 and Matthews correlation of classes (or
// token tags), Pearson and Spearman correlation of regression targets, as GLUE reports them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "frontend/config.h"

namespace bertc::train {

struct TaskScores {
  int64_t count = 0;  // examples (or tagged words) scored
  double loss = 0;    // the mean loss over them
  // Classes: accuracy; F1 of class 1 with two classes (the positive class, as GLUE's MRPC and
  // QQP count it), else the mean F1 over the classes present (macro); Matthews correlation
  // (Gorodkin's R_K for more than two classes). Token tags are scored per tagged word, every tag
  // a class ("O" too): not the entity-level F1 of seqeval that NER papers report.
  double accuracy = 0, f1 = 0, mcc = 0;
  // Regression: correlations and mean squared error.
  double pearson = 0, spearman = 0, mse = 0;
};

TaskScores classification_scores(const std::vector<int32_t>& truth, const std::vector<int32_t>& predicted,
                                 int64_t classes);
TaskScores regression_scores(const std::vector<float>& truth, const std::vector<float>& predicted);

// The figure `metric` names (not Auto).
double metric_value(const TaskScores& scores, frontend::TaskMetric metric);

// "accuracy 0.8125 f1 0.8000 mcc 0.6250" (or the regression figures) for progress lines.
std::string describe(const TaskScores& scores, frontend::FinetuneTask task);

}  // namespace bertc::train
