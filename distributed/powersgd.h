// PowerSGD (Vogels, Karimireddy and Jaggi, NeurIPS 2019): a gradient matrix M (n x m) travels as
// two rank-r factors. Per step, with error feedback E and the last step's Q (warm start):
//   M += E;  P = M Q;  sum P over ranks;  orthonormalize P's columns;  Q = M^T P;  sum Q;
//   the mean gradient is P Q^T / ranks;  E = M - that mean (what this rank's M lost).
// (n + m) r floats go on the wire instead of n m.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "distributed/communicator.h"

namespace bertc::distributed {

struct Matrix {
  int64_t rows = 0, cols = 0;
};

class PowerSgd {
 public:
  // The matrices it compresses, in the order exchange() gets them; Q starts as the same
  // pseudo-random normal matrix on every rank (`seed`).
  PowerSgd(std::vector<Matrix> matrices, int64_t rank, uint64_t seed);
  // Replaces each data[i] (rows x cols floats, row-major) by the sum over ranks of the compressed
  // gradients (ranks x the mean estimate). Returns the bytes this rank all-reduced.
  uint64_t exchange(Communicator& comm, const std::vector<float*>& data);
  // The factors' floats per exchange.
  int64_t factor_floats() const;
  // What matrix i's last exchange left out (added to its next gradient; empty before the first).
  const std::vector<float>& error(size_t i) const { return states_.at(i).error; }
  // Matrix i's Q (cols x its rank, the same on every rank), the warm start of its next exchange.
  const std::vector<float>& q(size_t i) const { return states_.at(i).q; }
  size_t matrices() const { return states_.size(); }
  // A checkpoint's state back: matrix i's Q and error feedback (sizes as q(i) and rows x cols;
  // std::invalid_argument otherwise).
  void restore(size_t i, std::vector<float> q, std::vector<float> error);
  // The engine that draws Q's fresh columns, as numbers (for a checkpoint), and back.
  std::vector<uint64_t> random_state() const;
  void set_random_state(const std::vector<uint64_t>& words);

 private:
  struct State {
    Matrix shape;
    int64_t r = 0;                       // min(rank, rows, cols)
    std::vector<float> q, error;         // cols x r; rows x cols
  };
  float normal();                        // a standard normal draw, the same sequence on every rank
  std::vector<State> states_;
  std::mt19937_64 random_;
};

// Gram-Schmidt on the columns of p (rows x r, row-major), in place; a column with no length left
// becomes zero (its factor then adds nothing), never NaN.
void orthonormalize_columns(float* p, int64_t rows, int64_t r);

}  // namespace bertc::distributed
