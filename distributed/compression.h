// How gradients travel between ranks: the closed set of compression schemes and the exchange's
// settings ([train] keys, run_config/config.def).
#pragma once

#include <cstdint>

#include "ir/enum_names.h"

namespace bertc::distributed {

// none: fp32 sums; fp16 / bf16: each rank's gradients rounded to 16 bits, summed in 16 bits
// (pre-divided by the rank count so that the sum stays in range); powersgd: rank-r factors with
// error feedback (Vogels et al., 2019); onebit: 1-bit Adam (Tang et al., 2021) or 1-bit LAMB (Li
// et al., 2021, with the optimizer lamb) — fp32 sums for
// the optimizer's onebit_warmup_steps, then the optimizer's momentum instead of the gradients,
// averaged as signs and a scale per block with error feedback on every rank and on the part each
// rank averages (distributed/onebit.h), the variance frozen (ir/ops.def adamw's and lamb's
// freeze_step).
enum class Compression { None, Fp16, Bf16, PowerSgd, OneBit };
BERTC_ENUM_NAMES(Compression, {Compression::None, "none"}, {Compression::Fp16, "fp16"}, {Compression::Bf16, "bf16"},
                 {Compression::PowerSgd, "powersgd"}, {Compression::OneBit, "onebit"})

// Where the sums of a device's gradients are made. auto: NCCL inside the step's CUDA Graph on a
// GPU when NCCL is found and the gradients go uncompressed, fp16 or bf16 (rounded on the GPU), else
// on the host (MPI or Gloo; PowerSGD always); nccl: NCCL or an error (with one rank too: the GPU
// check compares it with no exchange at all); host: over MPI or Gloo, a GPU's gradients staged
// through host memory.
enum class AllReduce { Auto, Nccl, Host };
BERTC_ENUM_NAMES(AllReduce, {AllReduce::Auto, "auto"}, {AllReduce::Nccl, "nccl"}, {AllReduce::Host, "host"})

struct ExchangeOptions {
  Compression compression = Compression::None;
  int64_t bucket_bytes = int64_t{25} << 20;  // gradients per all-reduce call, at most (a larger tensor is one bucket)
  int64_t powersgd_rank = 4;
  int64_t powersgd_warmup_steps = 10;        // optimizer steps all-reduced uncompressed first
  // A matrix is compressed only when its factors are at most this share of its elements
  // (smaller tensors gain little: they go uncompressed, in one bucket).
  double powersgd_max_share = 0.5;
  uint64_t seed = 0;                         // of PowerSGD's first Q (the same on every rank)
  int64_t onebit_warmup_steps = 0;           // onebit: optimizer steps all-reduced in fp32 first
  double beta1 = 0.9, beta2 = 0.999;         // onebit: the optimizer's decays
  double epsilon = 1e-6;                     // onebit: the optimizer's eps (the update's denominator)
  double max_grad_norm = 0;                  // onebit: the optimizer's clipping, applied past the warm-up here
};

}  // namespace bertc::distributed
