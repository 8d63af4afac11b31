// One process, the launcher's environment, and choosing the communicator (see communicator.h).
#include "dist/communicator.h"

#include <cstdlib>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "dist/mpi_communicator.h"

namespace bertc::dist {
namespace {

class SingleProcess : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  std::string describe() const override { return "one process"; }
  void set_timeout(double) override {}
  std::unique_ptr<PendingSum> start_sum(void*, size_t, Element) override {
    struct Done : PendingSum {
      void wait() override {}
    };
    return std::make_unique<Done>();
  }
  std::vector<uint64_t> all_gather(uint64_t value) override { return {value}; }
  void broadcast(void*, size_t, int) override {}
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
    l = {env_int("RANK").value_or(0), *wsize, env_int("LOCAL_RANK").value_or(0), "torchrun", false};
  }
  return l;
}

std::unique_ptr<Communicator> open_world(double timeout_seconds) {
  const Launch l = detect_launch();
  if (l.mpi) {
    std::unique_ptr<Communicator> world = mpi_world(timeout_seconds);
    // Another MPI's launcher (MPICH's mpiexec for an Open MPI bertc) starts N worlds of one.
    if (l.size > 0 && world->size() != l.size)
      throw RankError(fmt::format("{} started {} ranks, but MPI sees a world of {}: start bertc with the mpirun of the "
                                  "MPI it was built with ({})",
                                  l.launcher, l.size, world->size(), mpi_library_version()));
    return world;
  }
  if (l.size > 1)
    throw RankError(fmt::format(
        "WORLD_SIZE={} (RANK={}) is set, as torchrun and Slurm scripts do, but no MPI launcher started this process: "
        "bertc's ranks meet through MPI, so start them with `mpirun -np {} bertc train ...` (several machines: "
        "mpirun --host a:4,b:4), or `srun --mpi=pmix`",
        l.size, l.rank, l.size));
  return single_process();
}

}  // namespace bertc::dist
