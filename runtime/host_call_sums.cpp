// The Host device's sums in host calls (see host_call_sums.h).
#include "runtime/host_call_sums.h"

#include <fmt/format.h>

namespace bertc::runtime {

HostCallSums::HostCallSums(Device& device, distributed::Communicator& comm) : device_(device), comm_(comm) {}

HostCallSums::~HostCallSums() {
  for (std::unique_ptr<distributed::PendingSum>& p : in_flight_) p->wait();
}

std::string HostCallSums::describe() const {
  return fmt::format("summed over {} among the step's launches on the Host device", comm_.engine());
}

void HostCallSums::issue_sum(const std::vector<Span>& bucket, distributed::Element element) {
  device_.issue_host_call([this, bucket, element] {
    for (const Span& s : bucket) in_flight_.push_back(comm_.start_sum(s.data, s.count, element));
  });
}

void HostCallSums::join() {
  device_.issue_host_call([this] {
    for (std::unique_ptr<distributed::PendingSum>& p : in_flight_) p->wait();
    in_flight_.clear();
  });
}

}  // namespace bertc::runtime
