// 1-bit compression with error feedback and the ranks' compressed average (see onebit.h).
#include "distributed/onebit.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace bertc::distributed {

size_t onebit_bytes(size_t n) { return n / 8 + 4 * (n / kOneBitBlock); }

size_t onebit_part(size_t elements, int ranks) {
  const size_t per_rank = (elements + static_cast<size_t>(ranks) - 1) / static_cast<size_t>(ranks);
  return std::max<size_t>(1, (per_rank + kOneBitBlock - 1) / kOneBitBlock) * kOneBitBlock;
}

// Layout of a compressed vector: n / 8 bytes of signs (element i: bit i % 8 of byte i / 8), then
// one float scale per block.
void onebit_compress(const float* x, float* error, size_t n, uint8_t* out, size_t real) {
  if (n % kOneBitBlock != 0) throw std::invalid_argument(fmt::format("onebit_compress: {} elements is not whole blocks", n));
  uint8_t* signs = out;
  float* scales = reinterpret_cast<float*>(out + n / 8);  // (n / 8 is a multiple of 256: aligned)
  std::memset(signs, 0, n / 8);
  for (size_t b = 0; b < n / kOneBitBlock; ++b) {
    const size_t from = b * kOneBitBlock;
    double magnitude = 0;
    for (size_t i = from; i < from + kOneBitBlock; ++i) {
      error[i] += x[i];  // (error now holds the vector to compress)
      magnitude += std::fabs(error[i]);
    }
    const size_t counted = std::min(kOneBitBlock, real > from ? real - from : 0);
    const float scale = counted ? static_cast<float>(magnitude / static_cast<double>(counted)) : 0.0f;
    scales[b] = scale;
    for (size_t i = from; i < from + kOneBitBlock; ++i) {
      const bool negative = error[i] < 0;
      if (negative) signs[i / 8] |= static_cast<uint8_t>(1u << (i % 8));
      error[i] -= negative ? -scale : scale;
    }
  }
}

void onebit_decompress_add(const uint8_t* in, size_t n, float weight, float* out) {
  const uint8_t* signs = in;
  const float* scales = reinterpret_cast<const float*>(in + n / 8);
  for (size_t b = 0; b < n / kOneBitBlock; ++b) {
    const float s = weight * scales[b];
    for (size_t i = b * kOneBitBlock; i < (b + 1) * kOneBitBlock; ++i) out[i] += (signs[i / 8] >> (i % 8)) & 1u ? -s : s;
  }
}

OneBitAverage::OneBitAverage(size_t elements, int ranks)
    : elements_(elements), part_(onebit_part(elements, ranks)), ranks_(ranks) {
  const size_t all = part_ * static_cast<size_t>(ranks);
  padded_.assign(all, 0.0f);
  worker_error_.assign(all, 0.0f);
  server_error_.assign(part_, 0.0f);
  average_.assign(part_, 0.0f);
  const size_t part_bytes = onebit_bytes(part_);
  send_.resize(part_bytes * static_cast<size_t>(ranks));
  received_.resize(send_.size());
  mine_.resize(part_bytes);
  gathered_.resize(send_.size());
}

uint64_t OneBitAverage::average(Communicator& comm, float* values) {
  const size_t part_bytes = onebit_bytes(part_);
  // The padding travels as zeros and keeps no error: a part's last block is the same whatever the
  // padding carried before (a run resumed from a checkpoint goes on exactly as it would have).
  std::copy(values, values + elements_, padded_.begin());
  std::fill(padded_.begin() + static_cast<std::ptrdiff_t>(elements_), padded_.end(), 0.0f);
  auto real_in = [&](size_t first) { return elements_ > first ? elements_ - first : 0; };  // (of a part from `first`)
  for (int q = 0; q < ranks_; ++q)
    onebit_compress(padded_.data() + q * part_, worker_error_.data() + q * part_, part_, send_.data() + q * part_bytes,
                    real_in(q * part_));
  std::fill(worker_error_.begin() + static_cast<std::ptrdiff_t>(elements_), worker_error_.end(), 0.0f);
  comm.all_to_all(send_.data(), received_.data(), part_bytes, "the 1-bit momentum exchange (its reduce-scatter)");
  std::fill(average_.begin(), average_.end(), 0.0f);
  for (int r = 0; r < ranks_; ++r)
    onebit_decompress_add(received_.data() + r * part_bytes, part_, 1.0f / static_cast<float>(ranks_), average_.data());
  const size_t first = part_ * static_cast<size_t>(comm.rank());  // this rank's part's first element
  for (size_t i = first; i < first + part_; ++i)
    if (i >= elements_) average_[i - first] = 0.0f;
  onebit_compress(average_.data(), server_error_.data(), part_, mine_.data(), real_in(first));
  for (size_t i = std::max(first, elements_); i < first + part_; ++i) server_error_[i - first] = 0.0f;
  comm.all_gather_bytes(mine_.data(), gathered_.data(), part_bytes, "the 1-bit momentum exchange (its all-gather)");
  std::fill(padded_.begin(), padded_.end(), 0.0f);
  for (int q = 0; q < ranks_; ++q) onebit_decompress_add(gathered_.data() + q * part_bytes, part_, 1.0f, padded_.data() + q * part_);
  std::copy(padded_.begin(), padded_.begin() + static_cast<std::ptrdiff_t>(elements_), values);
  return bytes();
}

void OneBitAverage::restore(std::vector<float> worker_error, std::vector<float> server_error) {
  if (worker_error.size() != worker_error_.size() || server_error.size() != server_error_.size())
    throw std::invalid_argument(fmt::format("1-bit error feedback of {} and {} floats, expected {} and {}",
                                            worker_error.size(), server_error.size(), worker_error_.size(),
                                            server_error_.size()));
  worker_error_ = std::move(worker_error);
  server_error_ = std::move(server_error);
}

}  // namespace bertc::distributed
