// One process, the launcher's environment, and choosing the communicator (see communicator.h).
#include "distributed/communicator.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "distributed/gloo_communicator.h"
#include "distributed/mpi_communicator.h"

namespace bertc::distributed {
namespace {

class SingleProcess : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  std::string describe() const override { return "one process"; }
  std::string engine() const override { return "nothing (one process)"; }
  void set_timeout(double) override {}
  std::unique_ptr<PendingSum> start_sum(void*, size_t, Element) override {
    struct Done : PendingSum {
      void wait() override {}
    };
    return std::make_unique<Done>();
  }
  std::vector<uint64_t> all_gather(uint64_t value, const std::string&) override { return {value}; }
  void broadcast(void*, size_t, int, const std::string&) override {}
  void reduce_scatter(float*, const std::vector<size_t>&, const std::string&) override {}
  void all_gather_shares(float*, const std::vector<size_t>&, const std::string&) override {}
  void all_to_all(const void* send, void* recv, size_t bytes_each, const std::string&) override {
    std::memmove(recv, send, bytes_each);
  }
  void all_gather_bytes(const void* send, void* recv, size_t bytes_each, const std::string&) override {
    std::memmove(recv, send, bytes_each);
  }
  void meet(const std::string&) override {}
  [[noreturn]] void abort(int code) override { std::exit(code); }
};

// An integer environment variable, or nullopt when unset; throws on a malformed one.
std::optional<int> env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 0 || n > 1 << 20)
    throw RankError(fmt::format("the environment variable {}='{}' is not a rank or count", name, v));
  return static_cast<int>(n);
}

}  // namespace

size_t element_bytes(Element e) {
  switch (e) {
    case Element::F32: return 4;
    case Element::F64: case Element::I64: return 8;
    case Element::F16: case Element::Bf16: return 2;
  }
  return 0;
}

std::unique_ptr<Communicator> single_process() { return std::make_unique<SingleProcess>(); }

Launch detect_launch() {
  Launch l;
  // Open MPI's mpirun; then PMIx / PMI (srun, MPICH's mpiexec), whose MPI_Init also joins.
  if (auto size = env_int("OMPI_COMM_WORLD_SIZE")) {
    l = {env_int("OMPI_COMM_WORLD_RANK").value_or(0), *size, env_int("OMPI_COMM_WORLD_LOCAL_RANK").value_or(0),
         "mpirun", true};
  } else if (auto rank = env_int("PMIX_RANK")) {
    l = {*rank, env_int("SLURM_NTASKS").value_or(0), env_int("SLURM_LOCALID").value_or(0), "srun/PMIx", true};
  } else if (auto psize = env_int("PMI_SIZE")) {
    l = {env_int("PMI_RANK").value_or(0), *psize, env_int("MPI_LOCALRANKID").value_or(0), "PMI", true};
  } else if (auto wsize = env_int("WORLD_SIZE")) {
    // torchrun and Slurm scripts; without LOCAL_RANK, Slurm's SLURM_LOCALID, else all ranks are
    // taken to share one machine. (RANK = -1: unset, refused by open_world.)
    const bool torchrun = std::getenv("TORCHELASTIC_RUN_ID") != nullptr;
    l = {env_int("RANK").value_or(-1), *wsize, 0, torchrun ? "torchrun" : "RANK/WORLD_SIZE", false};
    l.local_rank = env_int("LOCAL_RANK").value_or(env_int("SLURM_LOCALID").value_or(std::max(l.rank, 0)));
    if (l.size <= 1) l.rank = std::max(l.rank, 0);  // one process: RANK needs no setting
    if (const char* a = std::getenv("MASTER_ADDR")) l.address = a;
    const char* agent = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
    const bool agent_holds_port = agent && std::string(agent) == "True";
    if (auto port = env_int("BERTC_RENDEZVOUS_PORT")) l.port = *port;
    else if (auto master = env_int("MASTER_PORT")) l.port = *master + (agent_holds_port ? 1 : 0);
  }
  return l;
}

std::unique_ptr<Communicator> open_world(double timeout_seconds) {
  const Launch l = detect_launch();
  // (a world of no ranks, or a rank number with no world: a launcher's mistake, not one process)
  if (const auto size = env_int("WORLD_SIZE"); !l.mpi && size && *size < 1)
    throw RankError(fmt::format("WORLD_SIZE={}: a world has 1 rank or more: set it to the number of ranks, or unset "
                                "it to train as one process",
                                *size));
  if (const auto rank = env_int("RANK"); !l.mpi && !env_int("WORLD_SIZE") && rank && *rank != 0)
    throw RankError(fmt::format("RANK={} is set, but WORLD_SIZE is not: set WORLD_SIZE to the number of ranks "
                                "(torchrun sets both), or unset RANK to train as one process",
                                *rank));
  if (l.mpi) {
    std::unique_ptr<Communicator> world = mpi_world(timeout_seconds);
    // Another MPI's launcher (MPICH's mpiexec for an Open MPI bertc) starts N worlds of one.
    if (l.size > 0 && world->size() != l.size)
      throw RankError(fmt::format("{} started {} ranks, but MPI sees a world of {}: start bertc with the mpirun of the "
                                  "MPI it was built with ({})",
                                  l.launcher, l.size, world->size(), mpi_library_version()));
    return world;
  }
  if (l.size > 1) {
    if (l.rank < 0)
      throw RankError(fmt::format("WORLD_SIZE={} is set, but RANK is not: give each rank its own RANK from 0 to {} "
                                  "(torchrun sets both; a Slurm script: RANK=$SLURM_PROCID)",
                                  l.size, l.size - 1));
    if (l.rank >= l.size)
      throw RankError(fmt::format("RANK={} is not below WORLD_SIZE={}: give each rank its own RANK from 0", l.rank,
                                  l.size));
    if (l.address.empty() || l.port <= 0 || l.port > 65535)
      throw RankError(fmt::format(
          "WORLD_SIZE={} is set, but {}: the ranks meet at rank 0's MASTER_ADDR:MASTER_PORT (torchrun sets both; a "
          "Slurm script exports MASTER_ADDR=$(scontrol show hostnames | head -1) and a free MASTER_PORT)",
          l.size,
          l.address.empty() ? "MASTER_ADDR is not"
          : l.port == 0 && !std::getenv("MASTER_PORT") ? "MASTER_PORT is not set"
                                                       : fmt::format("MASTER_PORT (port {}) is not a port", l.port)));
    return gloo_world(l, timeout_seconds);
  }
  return single_process();
}

}  // namespace bertc::distributed
