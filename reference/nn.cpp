// Composite ops over the last axis and their gradients: softmax, layer norm, cross-entropy;
// dropout with the Philox mask of ir/philox.h. Row statistics accumulate in double.
#include <cmath>

#include <fmt/format.h>

#include "ir/philox.h"
#include "reference/kernels.h"

namespace bertc::reference {
namespace {

int64_t row_length(const ir::Shape& s) { return s.back(); }
int64_t rows(const ir::Shape& s) { return s.back() == 0 ? 0 : ir::checked_numel(s) / s.back(); }

struct RowStats {
  double mean, rstd;
};
template <typename T>
RowStats row_stats(const T* x, int64_t n, double eps) {
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < n; ++i) sum += x[i];
  const double mean = sum / n;
  for (int64_t i = 0; i < n; ++i) sq += (x[i] - mean) * (x[i] - mean);
  return {mean, 1.0 / std::sqrt(sq / n + eps)};  // biased variance, as torch's layer_norm
}

// Row r's label and weight, or weight 0 when the row does not count.
struct LabelledRow {
  int64_t label;
  double weight;
};
template <typename T>
LabelledRow labelled_row(const OpEval<T>& e, size_t labels_at, int64_t r, int64_t classes) {
  const int64_t label = e.integer(labels_at)[r];
  const double weight = e.in.size() > labels_at + 1 ? static_cast<double>(e.real(labels_at + 1)[r]) : 1.0;
  if (label == e.template attr<int64_t>("ignore_index") || weight == 0) return {0, 0.0};
  if (label < 0 || label >= classes)
    throw EvalError(fmt::format("label {} of row {} is outside [0, {})", label, r, classes));
  return {label, weight};
}

// log(sum(exp(x))) of one row, shifted by its maximum for range.
template <typename T>
double log_sum_exp(const T* x, int64_t n) {
  double m = -INFINITY, s = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max<double>(m, x[i]);
  for (int64_t i = 0; i < n; ++i) s += std::exp(x[i] - m);
  return m + std::log(s);
}

}  // namespace

template <typename T>
void eval_Softmax(OpEval<T>& e) {
  const int64_t n = row_length(e.shape(0));
  for (int64_t r = 0; r < rows(e.shape(0)); ++r) {
    const T* x = e.real(0).data() + r * n;
    T* y = e.out[0].real.data() + r * n;
    const double lse = log_sum_exp(x, n);
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(std::exp(x[i] - lse));
  }
}

template <typename T>
void eval_SoftmaxGrad(OpEval<T>& e) {
  const int64_t n = row_length(e.shape(0));
  for (int64_t r = 0; r < rows(e.shape(0)); ++r) {
    const T* dy = e.real(0).data() + r * n;
    const T* y = e.real(1).data() + r * n;
    T* dx = e.out[0].real.data() + r * n;
    double dot = 0;
    for (int64_t i = 0; i < n; ++i) dot += double(dy[i]) * y[i];
    for (int64_t i = 0; i < n; ++i) dx[i] = static_cast<T>(y[i] * (dy[i] - dot));
  }
}

template <typename T>
void eval_LayerNorm(OpEval<T>& e) {
  const int64_t n = row_length(e.shape(0));
  const double eps = e.template attr<double>("eps");
  const T* w = e.real(1).data();
  const T* b = e.real(2).data();
  for (int64_t r = 0; r < rows(e.shape(0)); ++r) {
    const T* x = e.real(0).data() + r * n;
    T* y = e.out[0].real.data() + r * n;
    const RowStats s = row_stats(x, n, eps);
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>((x[i] - s.mean) * s.rstd * w[i] + b[i]);
  }
}

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * weight; dweight and dbias sum
// dy * xhat and dy over rows.
template <typename T>
void eval_LayerNormGrad(OpEval<T>& e) {
  const int64_t n = row_length(e.shape(0));
  const double eps = e.template attr<double>("eps");
  const T* w = e.real(2).data();
  std::vector<double> dw(n, 0.0), db(n, 0.0), xhat(n), g(n);
  for (int64_t r = 0; r < rows(e.shape(0)); ++r) {
    const T* dy = e.real(0).data() + r * n;
    const T* x = e.real(1).data() + r * n;
    T* dx = e.out[0].real.data() + r * n;
    const RowStats s = row_stats(x, n, eps);
    double mean_g = 0, mean_gx = 0;
    for (int64_t i = 0; i < n; ++i) {
      xhat[i] = (x[i] - s.mean) * s.rstd;
      g[i] = double(dy[i]) * w[i];
      mean_g += g[i] / n;
      mean_gx += g[i] * xhat[i] / n;
      dw[i] += double(dy[i]) * xhat[i];
      db[i] += dy[i];
    }
    for (int64_t i = 0; i < n; ++i) dx[i] = static_cast<T>(s.rstd * (g[i] - mean_g - xhat[i] * mean_gx));
  }
  for (int64_t i = 0; i < n; ++i) {
    e.out[1].real[i] = static_cast<T>(dw[i]);
    e.out[2].real[i] = static_cast<T>(db[i]);
  }
}

template <typename T>
void eval_Dropout(OpEval<T>& e) {
  const auto seed = static_cast<uint64_t>(e.integer(1)[0]);
  const auto offset = static_cast<uint64_t>(e.template attr<int64_t>("offset"));
  const double p = e.template attr<double>("p");
  const uint32_t threshold = ir::dropout_threshold(p);
  const T scale = T(1) / (T(1) - static_cast<T>(p));
  const std::vector<T>& x = e.real(0);
  std::vector<T>& y = e.out[0].real;
  for (size_t block = 0; 4 * block < x.size(); ++block) {  // one Philox call per four elements
    const ir::PhiloxCounter r = ir::dropout_block(seed, offset, block);
    for (size_t j = 0; j < 4 && 4 * block + j < x.size(); ++j) {
      const size_t i = 4 * block + j;
      y[i] = (r[j] >> 8) >= threshold ? x[i] * scale : T(0);
    }
  }
}

template <typename T>
void eval_CrossEntropy(OpEval<T>& e) {
  const int64_t classes = e.shape(0)[1];
  double total = 0, weights = 0;
  for (int64_t r = 0; r < e.shape(0)[0]; ++r) {
    const LabelledRow row = labelled_row(e, 1, r, classes);
    if (row.weight == 0) continue;
    const T* x = e.real(0).data() + r * classes;
    total += row.weight * (log_sum_exp(x, classes) - x[row.label]);
    weights += row.weight;
  }
  e.out[0].real[0] = static_cast<T>(weights == 0 ? 0.0 : total / weights);
}

// dlogits[r, c] = dloss * weight_r / sum(weights) * (softmax(logits_r)[c] - [c == label_r]).
template <typename T>
void eval_CrossEntropyGrad(OpEval<T>& e) {
  const double dloss = e.real(0)[0];
  const ir::Shape& shape = e.shape(1);
  const int64_t classes = shape[1];
  double weights = 0;
  for (int64_t r = 0; r < shape[0]; ++r) weights += labelled_row(e, 2, r, classes).weight;
  if (weights == 0) return;  // no row counts: the loss is the constant 0
  for (int64_t r = 0; r < shape[0]; ++r) {
    const LabelledRow row = labelled_row(e, 2, r, classes);
    if (row.weight == 0) continue;
    const T* x = e.real(1).data() + r * classes;
    T* dx = e.out[0].real.data() + r * classes;
    const double lse = log_sum_exp(x, classes), scale = dloss * row.weight / weights;
    for (int64_t c = 0; c < classes; ++c) dx[c] = static_cast<T>(scale * (std::exp(x[c] - lse) - (c == row.label)));
  }
}

BERTC_INSTANTIATE_EVAL(eval_Softmax)
BERTC_INSTANTIATE_EVAL(eval_SoftmaxGrad)
BERTC_INSTANTIATE_EVAL(eval_LayerNorm)
BERTC_INSTANTIATE_EVAL(eval_LayerNormGrad)
BERTC_INSTANTIATE_EVAL(eval_Dropout)
BERTC_INSTANTIATE_EVAL(eval_CrossEntropy)
BERTC_INSTANTIATE_EVAL(eval_CrossEntropyGrad)

}  // namespace bertc::reference
