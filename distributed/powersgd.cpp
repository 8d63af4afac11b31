// PowerSGD with error feedback and warm start (see powersgd.h).
#include "distributed/powersgd.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <stdexcept>

namespace bertc::distributed {

void orthonormalize_columns(float* p, int64_t rows, int64_t r) {
  auto norm_of = [&](int64_t j) {
    double n = 0;
    for (int64_t i = 0; i < rows; ++i) n += double(p[i * r + j]) * double(p[i * r + j]);
    return std::sqrt(n);
  };
  for (int64_t j = 0; j < r; ++j) {
    const double before = norm_of(j);
    // Against the earlier columns, twice (one Gram-Schmidt pass in floats leaves a residual that
    // is not orthogonal when the columns were nearly parallel), in double.
    for (int pass = 0; pass < 2; ++pass)
      for (int64_t k = 0; k < j; ++k) {
        double dot = 0;
        for (int64_t i = 0; i < rows; ++i) dot += double(p[i * r + j]) * double(p[i * r + k]);
        for (int64_t i = 0; i < rows; ++i) p[i * r + j] -= static_cast<float>(dot * p[i * r + k]);
      }
    // A column (nearly) in the span of the earlier ones is rounding noise: normalized it would be a
    // random direction counted as gradient; it becomes zero and its factor adds nothing.
    const double after = norm_of(j);
    const float scale = after > 1e-3 * before && after > 1e-30 ? static_cast<float>(1.0 / after) : 0.0f;
    for (int64_t i = 0; i < rows; ++i) p[i * r + j] *= scale;
  }
}

PowerSgd::PowerSgd(std::vector<Matrix> matrices, int64_t rank, uint64_t seed) {
  random_.seed(seed);
  for (const Matrix& m : matrices) {
    State s;
    s.shape = m;
    s.r = std::min({rank, m.rows, m.cols});
    s.q.resize(static_cast<size_t>(m.cols * s.r));
    for (float& x : s.q) x = normal();
    states_.push_back(std::move(s));  // (the error feedback is allocated at the first exchange)
  }
}

float PowerSgd::normal() {
  // Box-Muller on the engine's bits (std::normal_distribution's draws differ between standard
  // libraries; ranks must agree on Q).
  auto uniform = [&] { return (static_cast<double>(random_() >> 11) + 0.5) * 0x1.0p-53; };  // (0, 1)
  const double u = uniform(), v = uniform();
  return static_cast<float>(std::sqrt(-2 * std::log(u)) * std::cos(6.283185307179586 * v));
}

void PowerSgd::restore(size_t i, std::vector<float> q, std::vector<float> error) {
  State& s = states_.at(i);
  if (q.size() != s.q.size() || error.size() != static_cast<size_t>(s.shape.rows * s.shape.cols))
    throw std::invalid_argument("PowerSGD state of another size");
  s.q = std::move(q);
  s.error = std::move(error);
}

std::vector<uint64_t> PowerSgd::random_state() const {
  std::ostringstream text;  // (the standard's one way to read an engine's state out)
  text << random_;
  std::istringstream in(text.str());
  std::vector<uint64_t> words;
  for (uint64_t w; in >> w;) words.push_back(w);
  return words;
}

void PowerSgd::set_random_state(const std::vector<uint64_t>& words) {
  std::ostringstream text;
  for (uint64_t w : words) text << w << ' ';
  std::istringstream in(text.str());
  std::mt19937_64 engine;
  if (!(in >> engine)) throw std::invalid_argument("not the state of PowerSGD's random engine");
  random_ = engine;
}

int64_t PowerSgd::factor_floats() const {
  int64_t n = 0;
  for (const State& s : states_) n += (s.shape.rows + s.shape.cols) * s.r;
  return n;
}

uint64_t PowerSgd::exchange(Communicator& comm, const std::vector<float*>& data) {
  const float ranks = static_cast<float>(comm.size());
  // Every matrix's P in one buffer, summed in one call; then every Q.
  std::vector<size_t> p_at, q_at;
  size_t p_floats = 0, q_floats = 0;
  for (const State& s : states_) {
    p_at.push_back(p_floats), q_at.push_back(q_floats);
    p_floats += static_cast<size_t>(s.shape.rows * s.r);
    q_floats += static_cast<size_t>(s.shape.cols * s.r);
  }
  std::vector<float> ps(p_floats, 0.0f), qs(q_floats, 0.0f);
  for (size_t t = 0; t < states_.size(); ++t) {
    State& s = states_[t];
    const int64_t n = s.shape.rows, m = s.shape.cols, r = s.r;
    float* g = data[t];
    if (s.error.empty()) s.error.assign(static_cast<size_t>(n * m), 0.0f);
    for (int64_t i = 0; i < n * m; ++i) g[i] += s.error[static_cast<size_t>(i)];  // M = G + E, kept in data
    float* p = ps.data() + p_at[t];
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < m; ++k) {
        const float gik = g[i * m + k];
        for (int64_t j = 0; j < r; ++j) p[i * r + j] += gik * s.q[static_cast<size_t>(k * r + j)];
      }
  }
  comm.sum(ps.data(), ps.size(), Element::F32);
  for (size_t t = 0; t < states_.size(); ++t) {
    State& s = states_[t];
    const int64_t n = s.shape.rows, m = s.shape.cols, r = s.r;
    float* p = ps.data() + p_at[t];
    orthonormalize_columns(p, n, r);  // (of the sum: the mean's column space)
    float* q = qs.data() + q_at[t];
    const float* g = data[t];
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < m; ++k) {
        const float gik = g[i * m + k];
        for (int64_t j = 0; j < r; ++j) q[k * r + j] += gik * p[i * r + j];
      }
  }
  comm.sum(qs.data(), qs.size(), Element::F32);
  for (size_t t = 0; t < states_.size(); ++t) {
    State& s = states_[t];
    const int64_t n = s.shape.rows, m = s.shape.cols, r = s.r;
    const float* p = ps.data() + p_at[t];
    const float* q = qs.data() + q_at[t];  // the sum of the ranks' Q: ranks x the mean's
    float* g = data[t];
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < m; ++k) {
        float mean = 0;
        for (int64_t j = 0; j < r; ++j) mean += p[i * r + j] * q[k * r + j];
        mean /= ranks;
        s.error[static_cast<size_t>(i * m + k)] = g[i * m + k] - mean;
        g[i * m + k] = mean * ranks;
      }
    // Warm start: next step's Q is this step's mean Q. A column that came out zero (its P column
    // was zeroed as rounding noise, or the gradient was zero) would stay zero for good and the
    // factor lose a rank: it is drawn afresh, alike on every rank (Q is the same sum everywhere).
    for (int64_t i = 0; i < m * r; ++i) s.q[static_cast<size_t>(i)] = q[i] / ranks;
    for (int64_t j = 0; j < r; ++j) {
      bool zero = true;
      for (int64_t k = 0; k < m && zero; ++k) zero = s.q[static_cast<size_t>(k * r + j)] == 0.0f;
      if (zero)
        for (int64_t k = 0; k < m; ++k) s.q[static_cast<size_t>(k * r + j)] = normal();
    }
  }
  return (ps.size() + qs.size()) * sizeof(float);
}

}  // namespace bertc::distributed
