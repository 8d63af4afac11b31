// The Host device's sums over the ranks: MPI's or Gloo's, started and waited for in host calls
// among its launches (its buffers are host memory), so recorded into its graph as host calls.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "distributed/communicator.h"
#include "runtime/device.h"
#include "runtime/device_collective.h"

namespace bertc::runtime {

class HostCallSums : public DeviceCollective {
 public:
  // `device` issues the host calls (InRunSums::HostCalls); `comm` sums.
  HostCallSums(Device& device, distributed::Communicator& comm);
  // Waits for the sums still in flight (an exception unwinding past started buckets): MPI or Gloo
  // write the device's buffers until then.
  ~HostCallSums() override;

  std::string describe() const override;
  void issue_sum(const std::vector<Span>& bucket, distributed::Element element) override;
  void join() override;

 private:
  Device& device_;
  distributed::Communicator& comm_;
  std::vector<std::unique_ptr<distributed::PendingSum>> in_flight_;
};

}  // namespace bertc::runtime
