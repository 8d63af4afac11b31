// train/data_parallel: what --batch-size auto leaves free for NCCL's buffers (the multi-rank
// behaviour itself is tests/distributed/dp_test.py's).
#include <gtest/gtest.h>

#include "train/data_parallel.h"
#include "run_config/config.h"

namespace bertc::train {
namespace {

TEST(NcclReserve, OnlyWhereNcclWillSum) {
  run_config::TrainConfig t;  // allreduce auto, no compression
  const uint64_t reserve = uint64_t{512} << 20;
  EXPECT_EQ(nccl_reserve_bytes(t, 2, true, 1000), reserve);
  EXPECT_EQ(nccl_reserve_bytes(t, 2, false, 1000), 0u);  // the CPU reference or the Host device: MPI or Gloo
  EXPECT_EQ(nccl_reserve_bytes(t, 1, true, 1000), 0u);   // one rank sums nothing
  t.allreduce = distributed::AllReduce::Nccl;
  EXPECT_EQ(nccl_reserve_bytes(t, 1, true, 1000), reserve);  // ... unless NCCL is asked for
  t.allreduce = distributed::AllReduce::Host;
  EXPECT_EQ(nccl_reserve_bytes(t, 2, true, 1000), 0u);
  t.allreduce = distributed::AllReduce::Auto;
  t.gradient_compression = distributed::Compression::PowerSgd;  // compressed on the host
  EXPECT_EQ(nccl_reserve_bytes(t, 2, true, 1000), 0u);
  for (distributed::Compression c : {distributed::Compression::Fp16, distributed::Compression::Bf16}) {
    t.gradient_compression = c;  // rounded on the GPU into buffers of 2 bytes a param, summed by NCCL
    EXPECT_EQ(nccl_reserve_bytes(t, 2, true, 1000), reserve + 2000);
  }
}

}  // namespace
}  // namespace bertc::train
