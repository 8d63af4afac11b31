// 1-bit compression with error feedback (Tang et al., "1-bit Adam", ICML 2021): a vector travels
// as its signs and one scale per block of kOneBitBlock elements, and what the compression lost is
// added to the next vector sent ("error feedback"). OneBitAverage averages a vector over the ranks
// so: each rank compresses its vector (its worker error added) and sends rank q the q-th part
// (all-to-all, a compressed reduce-scatter); rank q averages the parts it got, adds its server
// error, compresses the average again and every rank gathers every part (a compressed
// all-gather). Every rank ends with the same vector; each rank sends about 2 (N-1)/N x n/8 bytes
// where fp32 sums would send 2 (N-1)/N x 4n.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "distributed/communicator.h"

namespace bertc::distributed {

// Elements per scale: a 4-byte scale per 2048 signs adds 1.6% to the 256 bytes of signs.
inline constexpr size_t kOneBitBlock = 2048;

// The bytes of n elements compressed (n a multiple of kOneBitBlock): n/8 of signs, 4 per block.
size_t onebit_bytes(size_t n);

// Compresses x + error (n elements, a multiple of kOneBitBlock) into `out` (onebit_bytes(n)):
// per block the signs (bit set: negative; 0 counts as positive) and the scale mean |x + error|,
// the one that leaves the least squared error for a vector of its signs; `error` becomes what the
// compression lost, x + error - decompressed. Elements from `real` on are padding (zero, with no
// error): left out of the blocks' means, so that a block's real elements keep their size.
void onebit_compress(const float* x, float* error, size_t n, uint8_t* out, size_t real);

// Adds weight x the decompressed vector of `in` (n elements) to out.
void onebit_decompress_add(const uint8_t* in, size_t n, float weight, float* out);

class OneBitAverage {
 public:
  // Averages vectors of `elements` floats over `ranks` ranks.
  OneBitAverage(size_t elements, int ranks);
  // Replaces `values` (elements floats, this rank's) by the ranks' average, compressed twice with
  // error feedback; the same on every rank. Returns the compressed vector's bytes (every rank's
  // parts: what a ring would send 2 (N-1)/N times, as the fp32 sums' bytes count).
  uint64_t average(Communicator& comm, float* values);
  // The bytes average() returns.
  uint64_t bytes() const { return static_cast<uint64_t>(ranks_) * onebit_bytes(part_); }

  // The error feedback, for a checkpoint: this rank's worker error (ranks x part floats: the
  // vector padded to whole parts) and the server error of its part (part floats).
  size_t part() const { return part_; }
  const std::vector<float>& worker_error() const { return worker_error_; }
  const std::vector<float>& server_error() const { return server_error_; }
  // Sets them (sizes as above; std::invalid_argument otherwise).
  void restore(std::vector<float> worker_error, std::vector<float> server_error);

 private:
  size_t elements_, part_;
  int ranks_;
  std::vector<float> padded_, worker_error_, server_error_, average_;
  std::vector<uint8_t> send_, received_, mine_, gathered_;
};

// The elements per rank's part of `elements` over `ranks`: whole blocks, at least one.
size_t onebit_part(size_t elements, int ranks);

}  // namespace bertc::distributed
