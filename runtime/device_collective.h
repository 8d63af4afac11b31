// Sums over the ranks issued among a device's launches, and so recorded into its graph with them,
// by whatever the device sums with: the device-neutral face of NCCL on a GPU's second stream and of
// MPI's or Gloo's sums in the Host device's host calls. Opened by Device::open_collective.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "distributed/communicator.h"

namespace bertc::runtime {

class DeviceCollective {
 public:
  struct Span {
    void* data = nullptr;  // device memory: `count` elements of the sum's Element
    size_t count = 0;
  };
  // Bounds the waits on the sums while it lives (see watch()).
  class Watch {
   public:
    virtual ~Watch() = default;
  };

  virtual ~DeviceCollective() = default;
  // How and where the sums run, for the line that says so: "summed by NCCL 2.21.5 (PATH) on a
  // second stream of the step's CUDA Graph".
  virtual std::string describe() const = 0;
  // Issues the in-place sums of `bucket` over the ranks once every launch issued so far has run,
  // without making the launches issued after it wait (the backward goes on while a bucket sums).
  // Every rank issues the same buckets in the same order.
  virtual void issue_sum(const std::vector<Span>& bucket, distributed::Element element) = 0;
  // Makes everything issued after it wait for every sum issued so far.
  virtual void join() = 0;
  // While the returned guard lives, a wait on these sums that outlasts the run's deadline stops
  // every rank, naming `what` ("step 12 (its gradient sums)"); nullptr where the communicator's own
  // deadlines bound the waits already (MPI's and Gloo's).
  virtual std::unique_ptr<Watch> watch(std::string /*what*/) { return nullptr; }
};

// What Device::open_collective gives: the sums, or why there are none here and what would make
// them possible (every rank gets the same answer).
struct CollectiveOpening {
  std::unique_ptr<DeviceCollective> sums;
  std::string why_not;  // "rank 1 found no NCCL (tried ...)"
  std::string fix;      // "run scripts/setup.sh on every machine (...)"
};

}  // namespace bertc::runtime
