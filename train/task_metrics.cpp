// Accuracy, F1, Matthews and rank correlations (see task_metrics.h).
#include "train/task_metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

namespace bertc::train {
namespace {

double pearson_of(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n, my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  // (a constant has no correlation: undefined, NaN as scipy says it; 0 read as a model no worse
  // than chance, and a collapsed model was kept as the best)
  return sxx == 0 || syy == 0 ? std::nan("") : sxy / std::sqrt(sxx * syy);
}

// 1-based ranks, ties given the mean of the ranks they span (as scipy's spearmanr).
std::vector<double> ranks_of(const std::vector<float>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> rank(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    for (size_t k = i; k <= j; ++k) rank[order[k]] = (static_cast<double>(i + j) / 2.0) + 1.0;
    i = j + 1;
  }
  return rank;
}

}  // namespace

TaskScores classification_scores(const std::vector<int32_t>& truth, const std::vector<int32_t>& predicted,
                                 int64_t classes) {
  if (truth.size() != predicted.size()) throw std::logic_error("classification_scores: sizes differ");
  TaskScores s;
  s.count = static_cast<int64_t>(truth.size());
  if (s.count == 0) return s;
  const auto k = static_cast<size_t>(classes);
  std::vector<double> true_count(k), predicted_count(k), hits(k);
  for (size_t i = 0; i < truth.size(); ++i) {
    true_count[static_cast<size_t>(truth[i])] += 1;
    predicted_count[static_cast<size_t>(predicted[i])] += 1;
    if (truth[i] == predicted[i]) hits[static_cast<size_t>(truth[i])] += 1;
  }
  const double n = static_cast<double>(s.count);
  const double correct = std::accumulate(hits.begin(), hits.end(), 0.0);
  s.accuracy = correct / n;
  // F1 of class c: 2 hits / (predicted + true), 0 when the class is neither.
  auto f1_of = [&](size_t c) {
    const double denominator = predicted_count[c] + true_count[c];
    return denominator == 0 ? 0.0 : 2 * hits[c] / denominator;
  };
  if (classes == 2) {
    s.f1 = f1_of(1);
  } else {
    double sum = 0, present = 0;
    for (size_t c = 0; c < k; ++c)
      if (true_count[c] + predicted_count[c] > 0) sum += f1_of(c), present += 1;
    s.f1 = sum / present;
  }
  // Gorodkin (2004): (c n - sum p_k t_k) / sqrt((n^2 - sum p_k^2)(n^2 - sum t_k^2)); with two
  // classes it is the usual (TP TN - FP FN) / sqrt(...).
  double pt = 0, pp = 0, tt = 0;
  for (size_t c = 0; c < k; ++c) {
    pt += predicted_count[c] * true_count[c];
    pp += predicted_count[c] * predicted_count[c];
    tt += true_count[c] * true_count[c];
  }
  const double denominator = std::sqrt((n * n - pp) * (n * n - tt));
  s.mcc = denominator == 0 ? 0.0 : (correct * n - pt) / denominator;
  return s;
}

TaskScores regression_scores(const std::vector<float>& truth, const std::vector<float>& predicted) {
  if (truth.size() != predicted.size()) throw std::logic_error("regression_scores: sizes differ");
  TaskScores s;
  s.count = static_cast<int64_t>(truth.size());
  if (s.count == 0) return s;
  const std::vector<double> x(truth.begin(), truth.end()), y(predicted.begin(), predicted.end());
  s.pearson = pearson_of(x, y);
  s.spearman = pearson_of(ranks_of(truth), ranks_of(predicted));
  for (size_t i = 0; i < x.size(); ++i) s.mse += (x[i] - y[i]) * (x[i] - y[i]);
  s.mse /= static_cast<double>(s.count);
  return s;
}

double metric_value(const TaskScores& s, frontend::TaskMetric metric) {
  switch (metric) {
    case frontend::TaskMetric::Accuracy: return s.accuracy;
    case frontend::TaskMetric::F1: return s.f1;
    case frontend::TaskMetric::Mcc: return s.mcc;
    case frontend::TaskMetric::Pearson: return s.pearson;
    case frontend::TaskMetric::Spearman: return s.spearman;
    case frontend::TaskMetric::Auto: break;
  }
  throw std::logic_error("metric_value: resolve auto first (FinetuneConfig::chosen_metric)");
}

std::string describe(const TaskScores& s, frontend::FinetuneTask task) {
  if (task == frontend::FinetuneTask::Regression)
    return fmt::format("loss {:.4f} pearson {:.4f} spearman {:.4f} mse {:.4f}", s.loss, s.pearson, s.spearman, s.mse);
  return fmt::format("loss {:.4f} accuracy {:.4f} f1 {:.4f} mcc {:.4f}", s.loss, s.accuracy, s.f1, s.mcc);
}

}  // namespace bertc::train
