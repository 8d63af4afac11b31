// Accuracy, F1, Matthews and rank correlations (see task_metrics.h).
#include "train/task_metrics.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>
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
                                 int64_t classes, int32_t left_out) {
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
      if (true_count[c] + predicted_count[c] > 0 && static_cast<int32_t>(c) != left_out) sum += f1_of(c), present += 1;
    s.f1 = present == 0 ? 0.0 : sum / present;
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

// (the outside tag and the scheme letters in either case: "o", "b-per" are tagged data's too)
bool is_outside(const std::string& name) { return name == "O" || name == "o"; }

namespace {

// A tag's scheme prefix ('B', 'I', 'E', 'S'; 'O' for "O") and its entity type.
struct Tag {
  char prefix = 'O';
  std::string type;
};

Tag tag_of(const std::string& name) {
  if (is_outside(name)) return {};
  return {static_cast<char>(std::toupper(static_cast<unsigned char>(name[0]))), name.substr(2)};
}

// Entities of one sentence as (first word, last word, type), conlleval's chunks.
std::set<std::tuple<size_t, size_t, std::string>> entities_of(const std::vector<int32_t>& tags,
                                                              const std::vector<Tag>& named) {
  std::set<std::tuple<size_t, size_t, std::string>> out;
  std::optional<size_t> begun;
  Tag previous;
  for (size_t i = 0; i <= tags.size(); ++i) {
    const Tag t = i < tags.size() ? named.at(static_cast<size_t>(tags[i])) : Tag{};
    const bool ends = begun && (previous.prefix == 'E' || previous.prefix == 'S' || t.prefix == 'O' ||
                                t.prefix == 'B' || t.prefix == 'S' || t.type != previous.type);
    if (ends) out.emplace(*begun, i - 1, previous.type), begun.reset();
    const bool begins = t.prefix == 'B' || t.prefix == 'S' ||
                        ((t.prefix == 'I' || t.prefix == 'E') && !begun);
    if (begins) begun = i;
    previous = t;
  }
  return out;
}

}  // namespace

bool tags_name_entities(const std::vector<std::string>& names) {
  bool any = false;
  for (const std::string& n : names) {
    if (is_outside(n)) continue;
    if (n.size() < 3 || n[1] != '-' ||
        std::string("BIES").find(static_cast<char>(std::toupper(static_cast<unsigned char>(n[0])))) == std::string::npos)
      return false;
    any = true;
  }
  return any;
}

double entity_f1(const std::vector<std::vector<int32_t>>& truth, const std::vector<std::vector<int32_t>>& predicted,
                 const std::vector<std::string>& names) {
  if (truth.size() != predicted.size()) throw std::logic_error("entity_f1: sentence counts differ");
  std::vector<Tag> named;
  for (const std::string& n : names) named.push_back(tag_of(n));
  double found = 0, true_entities = 0, predicted_entities = 0;
  for (size_t s = 0; s < truth.size(); ++s) {
    const auto t = entities_of(truth[s], named), p = entities_of(predicted[s], named);
    true_entities += static_cast<double>(t.size());
    predicted_entities += static_cast<double>(p.size());
    for (const auto& e : p) found += t.count(e);
  }
  return true_entities + predicted_entities == 0 ? 0.0 : 2 * found / (true_entities + predicted_entities);
}

std::string f1_meaning(const run_config::FinetuneConfig& f) {
  const std::vector<std::string> names = f.label_names();
  if (f.task == frontend::FinetuneTask::TokenClassification)
    return tags_name_entities(names)
               ? "f1 is of the entities the tags name (B-/I-/E-/S- spans of a type, each found where the prediction "
                 "has the same span and type: seqeval's and conlleval's), over all of them"
           : std::any_of(names.begin(), names.end(), is_outside)
               ? "f1 is the mean of each tag's F1 over the tagged words, O aside (entities are read where every tag "
                 "is O or B-, I-, E- or S- and a type; BILOU's L- and U- are not)"
               : "f1 is the mean of each tag's F1 over the tagged words (entities are read where every tag is O or "
                 "B-, I-, E- or S- and a type)";
  if (f.num_labels == 2)
    return fmt::format("f1 is of class 1{} as the positive class (as GLUE's MRPC and QQP count it)",
                       names.size() == 2 ? fmt::format(" ({})", names[1]) : "");
  return "f1 is the mean of each class's F1 (macro)";
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

double metric_value(const TaskScores& s, run_config::TaskMetric metric) {
  switch (metric) {
    case run_config::TaskMetric::Accuracy: return s.accuracy;
    case run_config::TaskMetric::F1: return s.f1;
    case run_config::TaskMetric::Mcc: return s.mcc;
    case run_config::TaskMetric::Pearson: return s.pearson;
    case run_config::TaskMetric::Spearman: return s.spearman;
    case run_config::TaskMetric::Auto: break;
  }
  throw std::logic_error("metric_value: resolve auto first (FinetuneConfig::chosen_metric)");
}

std::string describe(const TaskScores& s, frontend::FinetuneTask task) {
  if (task == frontend::FinetuneTask::Regression)
    return fmt::format("loss {:.4f} pearson {:.4f} spearman {:.4f} mse {:.4f}", s.loss, s.pearson, s.spearman, s.mse);
  return fmt::format("loss {:.4f} accuracy {:.4f} f1 {:.4f} mcc {:.4f}", s.loss, s.accuracy, s.f1, s.mcc);
}

}  // namespace bertc::train
