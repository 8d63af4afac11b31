// train/data_parallel: what --batch-size auto leaves free for a device's collective library (NCCL's
// buffers on a GPU; the multi-rank behaviour itself is tests/distributed/dp_test.py's).
#include <gtest/gtest.h>

#include "train/data_parallel.h"
#include "run_config/config.h"

namespace bertc::train {
namespace {

TEST(CollectiveReserve, OnlyWhereTheDevicesLibraryWillSum) {
  run_config::TrainConfig t;  // allreduce auto, no compression
  const uint64_t reserve = uint64_t{512} << 20;
  // A GPU's capabilities as the CUDA device says them (NCCL on a second stream, its 512 MiB), and
  // the Host device's (MPI or Gloo in host calls, no library of its own).
  runtime::DeviceCapabilities gpu, host;
  gpu.gpu = true, gpu.in_run_sums = runtime::InRunSums::SideQueue, gpu.collective_library_bytes = reserve;
  host.in_run_sums = runtime::InRunSums::HostCalls;
  EXPECT_EQ(collective_reserve_bytes(t, 2, gpu, 1000), reserve);
  EXPECT_EQ(collective_reserve_bytes(t, 2, host, 1000), 0u);  // the Host device: MPI or Gloo
  EXPECT_EQ(collective_reserve_bytes(t, 2, runtime::DeviceCapabilities{}, 1000), 0u);  // the CPU reference
  EXPECT_EQ(collective_reserve_bytes(t, 1, gpu, 1000), 0u);   // one rank sums nothing
  t.allreduce = distributed::AllReduce::Nccl;
  EXPECT_EQ(collective_reserve_bytes(t, 1, gpu, 1000), reserve);  // ... unless NCCL is asked for (on a GPU)
  t.allreduce = distributed::AllReduce::Host;
  EXPECT_EQ(collective_reserve_bytes(t, 2, gpu, 1000), 0u);
  t.allreduce = distributed::AllReduce::Auto;
  t.gradient_compression = distributed::Compression::PowerSgd;  // compressed on the host
  EXPECT_EQ(collective_reserve_bytes(t, 2, gpu, 1000), 0u);
  for (distributed::Compression c : {distributed::Compression::Fp16, distributed::Compression::Bf16}) {
    t.gradient_compression = c;  // rounded on the GPU into buffers of 2 bytes a param, summed by NCCL
    EXPECT_EQ(collective_reserve_bytes(t, 2, gpu, 1000), reserve + 2000);
  }
}

}  // namespace
}  // namespace bertc::train
