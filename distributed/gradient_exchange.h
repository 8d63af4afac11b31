// The gradient all-reduce of data-parallel training: each rank's summed gradients become the sum
// over every rank's, in buckets of at most ExchangeOptions::bucket_bytes (all started, then
// waited for: the later buckets travel while the earlier ones are unpacked), compressed as the
// options say. The caller divides by ranks x accumulation (the optimizer graph does).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "distributed/communicator.h"
#include "distributed/compression.h"
#include "distributed/onebit.h"
#include "distributed/powersgd.h"
#include "ir/host_tensor.h"
#include "ir/tensor_type.h"

namespace bertc::distributed {

struct GradientTensor {
  std::string name;
  ir::Shape shape;
};

struct ExchangeResult {
  uint64_t bytes = 0;            // this rank's all-reduce messages, summed (a ring sends 2(N-1)/N times it)
  bool compressed = false;       // false: fp32 this step (PowerSGD's warm-up, or a non-finite gradient)
  bool finite = true;            // every summed value is finite
};

// What a bucket's sum adds under `compression`: 16-bit elements for fp16 / bf16, else f32
// (PowerSGD's dense remainder and factors are f32).
Element sum_element(Compression compression);

// Which gradients PowerSGD compresses at `options`: a matrix whose rank-r factors, (rows + cols) r
// with r = min(powersgd_rank, rows, cols), are at most powersgd_max_share of its elements; the
// others (vectors, and matrices too small for the rank) are all-reduced in fp32.
struct PowerSgdSplit {
  std::vector<size_t> compressed, dense;  // indices into the tensors
  int64_t factor_floats = 0;              // (rows + cols) r summed over the compressed ones
};
PowerSgdSplit powersgd_split(const std::vector<GradientTensor>& tensors, const ExchangeOptions& options);

// The bytes of one step once compression is on (after PowerSGD's or 1-bit's warm-up) on `ranks`
// ranks, from the shapes alone: what GradientExchange sends then, with no state made (bertc
// estimate of any model).
uint64_t compressed_bytes_of(const std::vector<GradientTensor>& tensors, const ExchangeOptions& options, int ranks);

// The ring steps (each paying a link's latency once) of that step's collectives on `ranks` ranks:
// 2 (N-1) for each sum (a bucket's, PowerSGD's flag and its two factors, the clipping's number),
// N-1 each for 1-bit's all-to-all and all-gather (bertc estimate's latency term).
uint64_t latency_hops_of(const std::vector<GradientTensor>& tensors, const ExchangeOptions& options, int ranks);

class GradientExchange {
 public:
  // `tensors` in the order the backward finishes them (the last layer's first); they are bucketed
  // in that order. Throws std::invalid_argument for PowerSGD that would compress none of them
  // (a powersgd_rank too large for every matrix: everything would go in fp32, unasked).
  GradientExchange(Communicator& comm, std::vector<GradientTensor> tensors, ExchangeOptions options);
  // Waits for sums still in flight (an exception unwinding past started buckets): their buffers
  // are written by MPI or Gloo until then. (A wait past the deadline stops the rank.)
  ~GradientExchange();
  // data[i]: tensor i's elements (float, row-major), summed over the ranks in place. `step` is the
  // optimizer step (1-based), for PowerSGD's warm-up.
  ExchangeResult exchange(const std::vector<float*>& data, int64_t step);
  // The same sums as exchange() for `none`, fp16 and bf16, a bucket at a time as the backward
  // finishes them: start_bucket() for every bucket, in the same order on every rank (its data is
  // copied), then finish_buckets() waits for them all and writes the sums into `data`.
  // PowerSGD needs every gradient at once: exchange() only.
  // `bucket_data`: the bucket's tensors' data, in the bucket's order; `data` by tensor.
  void start_bucket(size_t bucket, const std::vector<float*>& bucket_data);
  ExchangeResult finish_buckets(const std::vector<float*>& data);
  // 1-bit Adam (Compression::OneBit): whether step `step` exchanges the momentum (past the
  // warm-up) rather than the gradients' fp32 sums (exchange()).
  bool exchanges_momentum(int64_t step) const;
  // That exchange. grads[i]: tensor i's gradient summed over this rank's micro-batches (its mean
  // is grads x grad_scale); momenta[i] and variances[i]: the optimizer's exp_avg and frozen
  // exp_avg_sq of it, the same on every rank. Each rank's momentum beta1 m + (1 - beta1) g,
  // divided by the update's denominator sqrt(v / c2) + eps, is averaged over the ranks by
  // OneBitAverage and multiplied back into momenta (the optimizer takes it as the step's:
  // ir/ops.def adamw's freeze_step), and grads become the sums over the ranks that this average
  // implies, ranks / grad_scale x (m' - beta1 m) / (1 - beta1), for the optimizer's gradient norm
  // (the update does not read them).
  ExchangeResult exchange_momentum(const std::vector<float*>& grads, const std::vector<float*>& momenta,
                                   const std::vector<const float*>& variances, double grad_scale, int64_t step);
  // The fp32 bytes of every gradient: what `none` all-reduces per step.
  uint64_t dense_bytes() const;
  // The bytes of one step once compression is on (after PowerSGD's warm-up): what exchange()
  // returns then, computed without sending anything (bertc estimate).
  uint64_t compressed_bytes() const { return compressed_bytes_of(tensors_, options_, comm_.size()); }
  // With PowerSGD: how many gradients it compresses and how many go in fp32 ("" otherwise).
  std::string compression_summary() const;
  const std::vector<std::vector<size_t>>& buckets() const { return buckets_; }
  const ExchangeOptions& options() const { return options_; }

  // PowerSGD's state for a checkpoint, alike on every rank (a collective: every rank calls it at
  // the same step), named under kStatePrefix: per compressed tensor its Q (".q") and the sum over
  // the ranks of their error feedback (".error") — all that the exchanges to come depend on, since
  // they add the ranks' gradients (error included) up before anything else, so it resumes on any
  // number of ranks — and the random engine ("random"). Empty without PowerSGD.
  ir::Environment<float> saved_state();
  // saved_state()'s tensors back, from rank 0's `state` (a collective; the other ranks' `state`
  // is not read): Q on every rank, the error sum on rank 0 and zero on the others. Returns what it
  // did, for the log: restored, or why PowerSGD starts anew (nothing saved, or saved for another
  // powersgd_rank or model).
  // With 1-bit compression: every rank's worker error (".worker_error.<rank>", rank 0 gathers
  // them) and the server error of every rank's part (".server_error", in element order), under
  // kOneBitPrefix; restored exactly on as many ranks, else each rank's worker error becomes their
  // mean (the server's average sees the same first-order error) and the parts are cut anew.
  std::string restore_state(const ir::Environment<float>& state);
  static constexpr const char* kStatePrefix = "dist.powersgd.";
  static constexpr const char* kOneBitPrefix = "dist.onebit.";

  // The tensors `which` (indices into `tensors`, in order) cut into buckets of at most
  // `bucket_bytes` of fp32 (a larger tensor a bucket of its own).
  using Buckets = std::vector<std::vector<size_t>>;
  static Buckets make_buckets(const std::vector<GradientTensor>& tensors, const std::vector<size_t>& which,
                              int64_t bucket_bytes);

 private:
  // The buckets' tensors (fp32 or 16-bit elements), started together and then unpacked.
  uint64_t sum_in_buckets(const std::vector<float*>& data, const Buckets& buckets, Compression compression);
  // One bucket packed (16-bit: each rank's share rounded) and its sum started; finish() waits for
  // every started bucket and unpacks it. Returns the bytes started / sent.
  struct InFlight {
    std::vector<size_t> tensors;
    std::vector<float> f32;
    std::vector<uint16_t> f16;
    std::unique_ptr<PendingSum> pending;
  };
  uint64_t start(const std::vector<float*>& bucket_data, const std::vector<size_t>& bucket, Compression compression);
  void finish(const std::vector<float*>& data, Compression compression);

  Communicator& comm_;
  std::vector<GradientTensor> tensors_;
  ExchangeOptions options_;
  Buckets buckets_;                          // of every tensor (fp32 and 16-bit sums, PowerSGD's warm-up)
  Buckets dense_buckets_;                    // PowerSGD: of the tensors it leaves uncompressed
  std::vector<size_t> dense_, compressed_;   // PowerSGD: the tensors it leaves and takes
  std::unique_ptr<PowerSgd> powersgd_;
  std::unique_ptr<OneBitAverage> onebit_;
  size_t elements_ = 0;                      // of every tensor
  ir::Environment<float> onebit_state();
  std::string restore_onebit(const ir::Environment<float>& state);
  std::vector<InFlight> in_flight_;
  uint64_t started_bytes_ = 0;  // of start_bucket's buckets, since the last finish_buckets
};

}  // namespace bertc::distributed
