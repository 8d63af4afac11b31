// The ranks of a data-parallel run and the collectives between them, behind one interface: one
// process (no launcher), MPI between the processes mpirun (or srun) started, or Gloo between the
// processes torchrun (or a Slurm script) started with RANK, WORLD_SIZE and MASTER_ADDR:MASTER_PORT. Every collective
// takes a deadline: a rank that died or hangs makes the others stop within it, with a message
// naming the rank where it can be known, instead of waiting forever.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace bertc::distributed {

// The launch cannot be joined, or the ranks disagree; the message names the rank(s) and what to
// do. The run cannot go on: the caller stops every rank (Communicator::abort). (A wait past its
// deadline stops every rank itself, naming the rank that did not come, with sums still in flight:
// unwinding would free their buffers under MPI.)
class RankError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What a sum adds: 16-bit elements are added as floats and rounded back after every addition
// (as NCCL's fp16 all-reduce does).
enum class Element { F32, F64, I64, F16, Bf16 };
size_t element_bytes(Element e);

// A sum started and not yet waited for.
class PendingSum {
 public:
  virtual ~PendingSum() = default;
  // Returns when the sum is in the buffer; past the communicator's deadline stops every rank.
  virtual void wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const = 0;  // among the ranks of this machine: which GPU it takes
  virtual std::string describe() const = 0;  // "Open MPI v4.1.4, 2 ranks" / "one process"
  virtual std::string engine() const = 0;    // what the sums go over, for messages: "MPI", "Gloo"
  // How long a wait may take from now on (start-up, with kernels to compile, may need longer than
  // a training step).
  virtual void set_timeout(double seconds) = 0;

  // Starts summing `count` elements at `data` over all ranks, in place (the buffer must stay
  // until wait()). Every rank starts the same sums in the same order.
  virtual std::unique_ptr<PendingSum> start_sum(void* data, size_t count, Element element) = 0;
  void sum(void* data, size_t count, Element element) { start_sum(data, count, element)->wait(); }
  // Every rank's `value`, by rank; `what` names the exchange in a late or dead rank's error ("the
  // agreement on stopping after step 12").
  virtual std::vector<uint64_t> all_gather(uint64_t value, const std::string& what) = 0;
  // `bytes` at `data` from rank `root` to every rank, waited for (`what` names it in a late or dead
  // rank's error: "a broadcast of rank 0's state").
  virtual void broadcast(void* data, size_t bytes, int root, const std::string& what) = 0;
  void broadcast(void* data, size_t bytes, int root) { broadcast(data, bytes, root, "a broadcast of rank 0's state"); }
  // ZeRO stage 1's collectives over `data`, every rank's share one after the other (counts[q] f32
  // elements of rank q's; the same counts on every rank), waited for: reduce_scatter sums the
  // ranks' `data` and leaves this rank's share of the sum in its share (the other shares are
  // scratch afterwards) — the gradients a rank updates, summed onto it; all_gather_shares gives
  // every rank every rank's share of `data` — the params each rank updated.
  virtual void reduce_scatter(float* data, const std::vector<size_t>& counts, const std::string& what) = 0;
  virtual void all_gather_shares(float* data, const std::vector<size_t>& counts, const std::string& what) = 0;
  // Byte blocks between the ranks, waited for (`what` names the exchange in a late or dead rank's
  // error): all_to_all sends block q of `send` (bytes_each bytes, ranks x bytes_each in all) to
  // rank q, which receives it as block r of `recv` from this rank r; all_gather_bytes gives every
  // rank every rank's `send` block, by rank. 1-bit compression's reduce-scatter and all-gather.
  virtual void all_to_all(const void* send, void* recv, size_t bytes_each, const std::string& what) = 0;
  virtual void all_gather_bytes(const void* send, void* recv, size_t bytes_each, const std::string& what) = 0;
  // Waits until every rank has called it with `what` (e.g. "the gradient all-reduce of step 12");
  // past the deadline rank 0 names the ranks that did not come and stops every rank.
  virtual void meet(const std::string& what) = 0;
  // Stops every rank now (MPI_Abort); for a rank that cannot go on while the others would wait.
  [[noreturn]] virtual void abort(int code) = 0;
};

// One process: every collective is a no-op.
std::unique_ptr<Communicator> single_process();

// How this process was started, from the launcher's environment.
struct Launch {
  int rank = 0, size = 1, local_rank = 0;
  std::string launcher;  // "mpirun", "srun/PMIx", "PMI", "torchrun", "RANK/WORLD_SIZE", or "" (none)
  bool mpi = false;      // started by an MPI launcher: MPI_Init joins the others
  // Without MPI: where rank 0's rendezvous listens (MASTER_ADDR; MASTER_PORT, or the port after it
  // under torchrun, whose own store holds MASTER_PORT; BERTC_RENDEZVOUS_PORT overrides).
  std::string address;
  int port = 0;
};
Launch detect_launch();

// The communicator of this process: MPI when an MPI launcher started it, Gloo when RANK and
// WORLD_SIZE > 1 did, one process otherwise; `timeout_seconds` bounds every wait. Throws RankError
// when the launch cannot be joined (a variable missing or malformed, rank 0 unreachable, a bertc
// built without the MPI or Gloo that the launch needs).
std::unique_ptr<Communicator> open_world(double timeout_seconds);

// Whether this bertc was built with MPI, and its library's version ("" without).
std::string mpi_library_version();

}  // namespace bertc::distributed
