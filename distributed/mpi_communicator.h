// The MPI communicator (Open MPI from Debian): the world of the processes an MPI launcher started.
#pragma once

#include <memory>

#include "distributed/communicator.h"

namespace bertc::distributed {

// MPI_Init, then MPI_COMM_WORLD; every wait polls until `timeout_seconds`. Throws RankError in a
// bertc built without MPI (BERTC_MPI off), saying so.
std::unique_ptr<Communicator> mpi_world(double timeout_seconds);

}  // namespace bertc::distributed
