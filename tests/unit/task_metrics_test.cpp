// Fine-tuning's dev figures against values worked out by hand (in the comments), as sklearn's
// accuracy_score, f1_score and matthews_corrcoef and scipy's pearsonr and spearmanr give them.
#include <gtest/gtest.h>

#include "train/task_metrics.h"
#include "run_config/config.h"

namespace bertc::train {
namespace {

TEST(TaskMetrics, BinaryClassification) {
  // TP 3 (rows 0 2 6), FN 1 (row 1), FP 1 (row 4), TN 3: accuracy 6/8; F1 = 2*3 / (2*3 + 1 + 1);
  // MCC = (3*3 - 1*1) / sqrt(4*4*4*4) = 0.5.
  const TaskScores s = classification_scores({1, 1, 1, 0, 0, 0, 1, 0}, {1, 0, 1, 0, 1, 0, 1, 0}, 2);
  EXPECT_EQ(s.count, 8);
  EXPECT_DOUBLE_EQ(s.accuracy, 0.75);
  EXPECT_DOUBLE_EQ(s.f1, 0.75);
  EXPECT_DOUBLE_EQ(s.mcc, 0.5);
}

TEST(TaskMetrics, MulticlassMacroF1AndGorodkinsMcc) {
  // truth 0 1 2 0 1 2, predicted 0 1 1 0 0 2: 4 correct of 6. Per class F1: 0: 2*2/(3+2) = 0.8,
  // 1: 2*1/(2+2) = 0.5, 2: 2*1/(1+2) = 2/3; macro 0.655556. MCC: predicted counts 3 2 1, true
  // 2 2 2: (4*6 - 12) / sqrt((36 - 14) * (36 - 12)) = 12 / sqrt(528) = 0.522233.
  const TaskScores s = classification_scores({0, 1, 2, 0, 1, 2}, {0, 1, 1, 0, 0, 2}, 3);
  EXPECT_DOUBLE_EQ(s.accuracy, 4.0 / 6.0);
  EXPECT_NEAR(s.f1, (0.8 + 0.5 + 2.0 / 3.0) / 3.0, 1e-12);
  EXPECT_NEAR(s.mcc, 12.0 / std::sqrt(528.0), 1e-12);
}

// Token tags scored by entity (conlleval's chunks), worked out by hand: sentence 1's truth has PER
// over words 0-1 and LOC at 3, the prediction PER at 0 alone (another span: not found) and LOC at
// 3; sentence 2's LOC begins at an I- after O (IOB1) in the truth and at B- in the prediction, the
// same span; sentence 3's I-PER then I-LOC are two entities (the type changes). Found 4 of 5 true
// and 5 predicted: F1 = 2 * 4 / (5 + 5).
TEST(TaskMetrics, EntityF1CountsWholeSpansOfOneType) {
  const std::vector<std::string> names = {"O", "B-PER", "I-PER", "B-LOC", "I-LOC"};
  EXPECT_TRUE(tags_name_entities(names));
  const std::vector<std::vector<int32_t>> truth = {{1, 2, 0, 3}, {0, 4, 4}, {2, 4}};
  const std::vector<std::vector<int32_t>> predicted = {{1, 0, 0, 3}, {0, 3, 4}, {2, 4}};
  EXPECT_DOUBLE_EQ(entity_f1(truth, predicted, names), 0.8);
  // IOBES: S- is an entity of one word, E- ends one: truth PER at 0 and LOC over 1-2, predicted
  // B-PER (one word: the next tag begins another) and LOC over 1-2: both found.
  const std::vector<std::string> iobes = {"O", "S-PER", "B-PER", "B-LOC", "I-LOC", "E-LOC"};
  EXPECT_DOUBLE_EQ(entity_f1({{1, 3, 5}}, {{2, 3, 4}}, iobes), 1.0);
  EXPECT_DOUBLE_EQ(entity_f1({{0, 0}}, {{0, 0}}, names), 0.0);  // (no entity on either side)
  EXPECT_FALSE(tags_name_entities({"O", "PER", "LOC"}));
  EXPECT_FALSE(tags_name_entities({"O"}));
  EXPECT_FALSE(tags_name_entities({"O", "X-PER"}));
}

// Tags that name no entities: the mean F1 over the tags other than "O" (left out): truth 0 1 2 1,
// predicted 0 1 1 1: tag 1's F1 2*2/(3+2) = 0.8, tag 2's 0 (predicted never): mean 0.4 (with O's
// 1.0, 0.6: what the run reported before, O's easy hits lifting it).
TEST(TaskMetrics, MacroF1CanLeaveOutAClass) {
  EXPECT_NEAR(classification_scores({0, 1, 2, 1}, {0, 1, 1, 1}, 3, 0).f1, 0.4, 1e-12);
  EXPECT_NEAR(classification_scores({0, 1, 2, 1}, {0, 1, 1, 1}, 3).f1, 0.6, 1e-12);
}

TEST(TaskMetrics, ConstantPredictionsHaveNoCorrelation) {
  // Always class 0: MCC's denominator is 0 (sklearn returns 0); F1 of class 1 is 0.
  const TaskScores s = classification_scores({0, 1, 1, 0}, {0, 0, 0, 0}, 2);
  EXPECT_DOUBLE_EQ(s.accuracy, 0.5);
  EXPECT_DOUBLE_EQ(s.f1, 0.0);
  EXPECT_DOUBLE_EQ(s.mcc, 0.0);
}

TEST(TaskMetrics, Regression) {
  // truth 1 2 3 4, predicted 1 3 2 5: sxy 5.5, sxx 5, syy 8.75: Pearson 5.5 / sqrt(43.75); ranks
  // 1 2 3 4 and 1 3 2 4: Spearman 4 / 5; MSE (0 + 1 + 1 + 1) / 4.
  const TaskScores s = regression_scores({1, 2, 3, 4}, {1, 3, 2, 5});
  EXPECT_NEAR(s.pearson, 5.5 / std::sqrt(43.75), 1e-12);
  EXPECT_NEAR(s.spearman, 0.8, 1e-12);
  EXPECT_NEAR(s.mse, 0.75, 1e-12);
}

// A model that predicts one value for every example has no correlation with the truth: undefined
// (NaN, as scipy gives), never 0, which read as chance and let a collapsed model be kept as the best.
TEST(TaskMetrics, ConstantRegressionPredictionsHaveNoCorrelation) {
  const TaskScores s = regression_scores({1, 2, 3, 4}, {1.3f, 1.3f, 1.3f, 1.3f});
  EXPECT_TRUE(std::isnan(s.pearson));
  EXPECT_TRUE(std::isnan(s.spearman));
  EXPECT_NEAR(s.mse, (0.09 + 0.49 + 2.89 + 7.29) / 4, 1e-6);
}

TEST(TaskMetrics, SpearmanGivesTiesTheirMeanRank) {
  // truth ranks 1 2.5 2.5 4 (the tie shares ranks 2 and 3), predicted 1 2 3 4: sxy = 4.5 (dx
  // -1.5 0 0 1.5, dy -1.5 -0.5 0.5 1.5), sxx 4.5, syy 5: 4.5 / sqrt(22.5).
  const TaskScores s = regression_scores({1, 2, 2, 3}, {10, 20, 30, 40});
  EXPECT_NEAR(s.spearman, 4.5 / std::sqrt(22.5), 1e-12);
}

TEST(TaskMetrics, TheChosenFigure) {
  TaskScores s;
  s.accuracy = 0.1, s.f1 = 0.2, s.mcc = 0.3, s.pearson = 0.4, s.spearman = 0.5;
  EXPECT_EQ(metric_value(s, run_config::TaskMetric::F1), 0.2);
  EXPECT_EQ(metric_value(s, run_config::TaskMetric::Spearman), 0.5);
  EXPECT_THROW(metric_value(s, run_config::TaskMetric::Auto), std::logic_error);
}

}  // namespace
}  // namespace bertc::train
