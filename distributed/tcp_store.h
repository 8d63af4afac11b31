// The rendezvous of ranks that no MPI launcher started (torchrun, Slurm scripts): a key-value store
// that rank 0 serves at MASTER_ADDR:MASTER_PORT over TCP and every rank, rank 0 too, is a client
// of. Gloo exchanges its connection addresses through it. Each client says which rank it is and
// stays connected for the whole run, so rank 0 also learns from it which ranks are gone (their
// connection closed), to name them when a collective fails. Values are opaque bytes; ranks must
// share a byte order (every machine bertc runs on is little-endian).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace bertc::distributed {

// 127.x.x.x or ::1.
bool is_loopback(const std::string& address);

// Rank 0's side: a thread that answers every client until destroyed.
class TcpStoreServer {
 public:
  // Listens on `port` of every address of this machine; throws RankError when it cannot (the port
  // is taken: the message says which variable chooses another).
  TcpStoreServer(int port, int ranks);
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  int port() const { return port_; }  // the port listened on (the one asked for, or the kernel's for 0)
  // Ranks that joined and whose connection has closed since (their process ended).
  std::vector<int> gone() const;
  // The address of this machine that the joined ranks reached it at: one that is not a loopback
  // address if any rank came over the network, else the loopback one ("" before any joined).
  std::string reached_at() const;
  // Ranks that have not joined yet.
  std::vector<int> absent() const;
  // Ranks still connected whose last request (a ping, when they wait) is older than `seconds`.
  std::vector<int> silent(double seconds) const;
  // Whether another process started as rank 0 of a world of this size found this server holding
  // the port (it asks, as a probe, before it says why it cannot listen): two processes got RANK=0.
  bool second_rank0() const;

 private:
  void serve();
  struct State;
  std::unique_ptr<State> state_;
  int listener_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Every rank's side. Calls may come from several threads (one at a time).
class TcpStoreClient {
 public:
  // Connects to rank 0's server, retrying until `timeout_seconds` have passed (rank 0 may start
  // later), and joins as `rank` of `ranks`; throws RankError naming the address when it cannot, or
  // when rank 0 refuses (another world size, or the rank taken).
  TcpStoreClient(const std::string& host, int port, int rank, int ranks, double timeout_seconds);
  ~TcpStoreClient();
  TcpStoreClient(const TcpStoreClient&) = delete;
  TcpStoreClient& operator=(const TcpStoreClient&) = delete;

  void set(const std::string& key, const std::vector<char>& value);
  std::optional<std::vector<char>> try_get(const std::string& key);
  // Waits for the key to be set; throws RankError past the timeout, naming the key.
  std::vector<char> get(const std::string& key, double timeout_seconds);
  // Whether rank 0's server has closed the connection (it ended), or stopped answering; never
  // blocks.
  bool server_gone();
  // Tells rank 0 that this rank is alive (and waiting); a server gone or silent for 10 s is not an
  // error here (server_gone() says so afterwards).
  void ping();
  // The address of this machine that reaches rank 0: where the other ranks can reach it too.
  std::string local_address();

 private:
  // One request and its answer, waited for `answer_seconds`; throws RankError (and closes the
  // connection for good) when rank 0 does not answer.
  std::pair<char, std::vector<char>> request(char op, const std::string& key, const std::vector<char>& value,
                                             double answer_seconds);
  std::mutex mutex_;
  int fd_ = -1;
  std::string where_;  // "host:port", for messages
};

}  // namespace bertc::distributed
