// Collectives over Gloo's TCP transport, for ranks that no MPI launcher started: torchrun, or a
// Slurm script that sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT. The ranks meet
// at rank 0's rendezvous (distributed/tcp_store.h), then connect to each other directly.
#pragma once

#include <memory>
#include <string>

#include "distributed/communicator.h"

namespace bertc::distributed {

// Joins the other ranks of `launch` (its size > 1, its address and port set); throws RankError
// when they cannot be reached within `timeout_seconds`, or when bertc was built without Gloo.
std::unique_ptr<Communicator> gloo_world(const Launch& launch, double timeout_seconds);

// "Gloo 0.5.0", or "" when bertc was built without it.
std::string gloo_library_version();

}  // namespace bertc::distributed
