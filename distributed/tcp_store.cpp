// The rendezvous store over TCP (see tcp_store.h). A request is an op byte, a key length (u32), a
// value length (u64), the key and the value; an answer is a status byte, a length (u64) and bytes.
// Ops: 'H' join (the value: rank and world size; rank -1: a probe, refused, by a process that
// found the port taken), 'S' set, 'G' get (status 'n': not set yet), 'P' ping (every request
// tells the server its rank is alive).
#include "distributed/tcp_store.h"

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include "distributed/communicator.h"

namespace bertc::distributed {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kGreeting[] = "bertc-rendezvous/1";
// A key or value past these is not one of ours: the connection is dropped.
constexpr uint32_t kMaxKey = 4096;
constexpr uint64_t kMaxValue = uint64_t{1} << 28;

bool write_all(int fd, const void* data, size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

// poll() that goes on when a signal interrupts it (a graceful stop's SIGTERM), for what is left
// of the timeout.
int poll_through_signals(pollfd* fds, nfds_t n, int timeout_ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const int r = ::poll(fds, n, timeout_ms);
    if (r >= 0 || errno != EINTR) return r;
    timeout_ms = static_cast<int>(std::max<int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count()));
  }
}

bool read_all(int fd, void* data, size_t n) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t k = ::recv(fd, p, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;  // closed, or the receive timeout passed
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

bool send_message(int fd, char op, const std::string& key, const std::vector<char>& value) {
  const uint32_t key_bytes = static_cast<uint32_t>(key.size());
  const uint64_t value_bytes = value.size();
  return write_all(fd, &op, 1) && write_all(fd, &key_bytes, 4) && write_all(fd, &value_bytes, 8) &&
         write_all(fd, key.data(), key.size()) && write_all(fd, value.data(), value.size());
}

bool send_answer(int fd, char status, const std::vector<char>& bytes) {
  const uint64_t n = bytes.size();
  return write_all(fd, &status, 1) && write_all(fd, &n, 8) && write_all(fd, bytes.data(), bytes.size());
}

std::vector<char> text(const std::string& s) { return {s.begin(), s.end()}; }

// A slow or silent peer must not stall the server (or a client) forever.
void set_timeouts(int fd, double seconds) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(seconds);
  tv.tv_usec = static_cast<suseconds_t>((seconds - static_cast<double>(tv.tv_sec)) * 1e6);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

// This end's address of a connected socket, as text ("10.0.0.5"; an IPv4 address that a
// dual-stack socket shows as ::ffff:10.0.0.5 without that prefix); "" when it has none.
std::string local_address_of(int fd) {
  sockaddr_storage self{};
  socklen_t length = sizeof self;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&self), &length) != 0) return "";
  char text[INET6_ADDRSTRLEN] = {};
  if (self.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&self)->sin_addr, text, sizeof text);
  } else {
    const in6_addr& a = reinterpret_cast<sockaddr_in6*>(&self)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(&a)) ::inet_ntop(AF_INET, a.s6_addr + 12, text, sizeof text);
    else ::inet_ntop(AF_INET6, &a, text, sizeof text);
  }
  return text;
}


}  // namespace

bool is_loopback(const std::string& address) { return address.starts_with("127.") || address == "::1"; }

struct TcpStoreServer::State {
  struct Client {
    int fd;
    int rank;             // -1 until it has joined
    std::string reached;  // the address of this machine it reached the server at
  };
  int ranks;
  std::map<std::string, std::vector<char>> values;
  std::vector<Client> clients;
  mutable std::mutex mutex;  // guards `joined`, `gone` and `heard` (read by other threads)
  std::set<int> joined, gone;
  std::map<int, Clock::time_point> heard;  // each joined rank's last request
  std::vector<std::string> reached;        // the addresses joined ranks reached this machine at
  bool second_rank0 = false;               // a probe of a world of this size came (TcpStoreServer::second_rank0)
};

namespace {

int connect_within(const addrinfo& a, double seconds, std::string& why);

// What answers bertc's greeting on this machine's `port`, asked as a probe (rank -1, which a
// bertc rendezvous refuses and notes): its refusal, or nullopt when nothing bertc answers.
std::optional<std::string> probe_rendezvous(int port, int ranks) {
  addrinfo hints{}, *found = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (::getaddrinfo("localhost", std::to_string(port).c_str(), &hints, &found) != 0) return std::nullopt;
  std::string why;
  int fd = -1;
  for (addrinfo* a = found; a && fd < 0; a = a->ai_next) fd = connect_within(*a, 1.0, why);
  ::freeaddrinfo(found);
  if (fd < 0) return std::nullopt;
  set_timeouts(fd, 2);
  const int32_t who[2] = {-1, ranks};
  const uint32_t key_bytes = sizeof kGreeting - 1;
  const uint64_t value_bytes = sizeof who;
  char status = 0;
  uint64_t length = 0;
  std::string text;
  const bool asked = write_all(fd, "H", 1) && write_all(fd, &key_bytes, 4) && write_all(fd, &value_bytes, 8) &&
                     write_all(fd, kGreeting, key_bytes) && write_all(fd, who, sizeof who);
  const bool answered = asked && read_all(fd, &status, 1) && read_all(fd, &length, 8) && length < 4096 &&
                        (text.resize(length), read_all(fd, text.data(), length));
  ::close(fd);
  if (!answered) return std::nullopt;
  return text;
}

// Why rank 0 cannot take `port`: another rank 0 of this world holds it (two processes were given
// RANK=0), another bertc run does, or another program.
std::string port_taken(int port, int ranks) {
  const std::optional<std::string> bertc = probe_rendezvous(port, ranks);
  if (!bertc)
    return fmt::format("rank 0 cannot listen on port {} for the other ranks: another program holds it: choose a free "
                       "port with MASTER_PORT (or BERTC_RENDEZVOUS_PORT under torchrun)",
                       port);
  if (*bertc == "a probe")
    return fmt::format("rank 0 cannot listen on port {}: another bertc holds it as rank 0 of a world of {} ranks, as "
                       "this one would be: two processes were started with RANK=0. Give each rank its own RANK, 0 to "
                       "{} (torchrun sets it; in a Slurm script, RANK=$SLURM_PROCID); if that is another run, choose "
                       "another MASTER_PORT",
                       port, ranks, ranks - 1);
  return fmt::format("rank 0 cannot listen on port {}: another bertc run, of another world size, holds it: choose "
                     "another MASTER_PORT (or BERTC_RENDEZVOUS_PORT under torchrun)",
                     port);
}

}  // namespace

TcpStoreServer::TcpStoreServer(int port, int ranks) : state_(std::make_unique<State>()) {
  state_->ranks = ranks;
  listener_ = ::socket(AF_INET6, SOCK_STREAM, 0);
  const bool six = listener_ >= 0;
  if (!six) listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (listener_ < 0) throw RankError(fmt::format("cannot open a socket for the rendezvous: {}", std::strerror(errno)));
  const int on = 1, off = 0;
  ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  int rc;
  if (six) {  // both IPv6 and IPv4 clients
    ::setsockopt(listener_, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a);
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  if (rc != 0 || ::listen(listener_, 128) != 0) {
    const int error = errno;
    ::close(listener_);
    if (error == EADDRINUSE) throw RankError(port_taken(port, ranks));
    throw RankError(fmt::format("rank 0 cannot listen on port {} for the other ranks: {}", port, std::strerror(error)));
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  ::getsockname(listener_, reinterpret_cast<sockaddr*>(&bound), &length);
  port_ = ntohs(six ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  thread_ = std::thread([this] { serve(); });
}

TcpStoreServer::~TcpStoreServer() {
  stop_ = true;
  thread_.join();
  for (const State::Client& c : state_->clients) ::close(c.fd);
  ::close(listener_);
}

std::vector<int> TcpStoreServer::gone() const {
  std::lock_guard lock(state_->mutex);
  return {state_->gone.begin(), state_->gone.end()};
}

std::string TcpStoreServer::reached_at() const {
  std::lock_guard lock(state_->mutex);
  for (const std::string& a : state_->reached)
    if (!a.empty() && !is_loopback(a)) return a;
  return state_->reached.empty() ? "" : state_->reached.front();
}

std::vector<int> TcpStoreServer::absent() const {
  std::lock_guard lock(state_->mutex);
  std::vector<int> missing;
  for (int r = 0; r < state_->ranks; ++r)
    if (!state_->joined.count(r)) missing.push_back(r);
  return missing;
}

bool TcpStoreServer::second_rank0() const {
  std::lock_guard lock(state_->mutex);
  return state_->second_rank0;
}

std::vector<int> TcpStoreServer::silent(double seconds) const {
  std::lock_guard lock(state_->mutex);
  const auto since = Clock::now() - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<int> quiet;
  for (const auto& [rank, when] : state_->heard)
    if (rank != 0 && when < since && !state_->gone.count(rank)) quiet.push_back(rank);
  return quiet;
}

void TcpStoreServer::serve() {
  State& s = *state_;
  // Answers one request of client i; false: drop it (closed, or not one of ours).
  auto answer = [&](State::Client& c) {
    char op = 0;
    uint32_t key_bytes = 0;
    uint64_t value_bytes = 0;
    if (!read_all(c.fd, &op, 1) || !read_all(c.fd, &key_bytes, 4) || !read_all(c.fd, &value_bytes, 8)) return false;
    if (key_bytes > kMaxKey || value_bytes > kMaxValue) return false;
    std::string key(key_bytes, '\0');
    std::vector<char> value(value_bytes);
    if (!read_all(c.fd, key.data(), key.size()) || !read_all(c.fd, value.data(), value.size())) return false;
    if (op == 'H') {
      int32_t who[2] = {-1, -1};
      if (key != kGreeting || value.size() != sizeof who) return false;
      std::memcpy(who, value.data(), sizeof who);
      std::string refusal;
      {
        std::lock_guard lock(s.mutex);
        if (who[1] != s.ranks)
          refusal = fmt::format("rank 0 runs a world of {} ranks, this rank one of {}: start every rank with the same "
                                "WORLD_SIZE", s.ranks, who[1]);
        else if (who[0] == -1)
          s.second_rank0 = true, refusal = "a probe";
        else if (who[0] < 0 || who[0] >= s.ranks || s.joined.count(who[0]))
          refusal = fmt::format("rank {} {}: give every rank its own RANK below WORLD_SIZE={}", who[0],
                                s.joined.count(who[0]) ? "has joined already" : "is not a rank rank 0 waits for", s.ranks);
        if (refusal.empty()) {
          c.rank = who[0];
          s.joined.insert(c.rank);
          s.heard[c.rank] = Clock::now();
          s.reached.push_back(c.reached);
        }
      }
      return send_answer(c.fd, refusal.empty() ? 'k' : 'x', text(refusal));
    }
    if (c.rank < 0) return false;  // not joined: not one of our ranks
    {
      std::lock_guard lock(s.mutex);
      s.heard[c.rank] = Clock::now();
    }
    if (op == 'P') return send_answer(c.fd, 'k', {});
    if (op == 'S') {
      s.values[key] = std::move(value);
      return send_answer(c.fd, 'k', {});
    }
    if (op == 'G') {
      const auto it = s.values.find(key);
      return it == s.values.end() ? send_answer(c.fd, 'n', {}) : send_answer(c.fd, 'k', it->second);
    }
    return false;
  };
  while (!stop_) {
    std::vector<pollfd> fds{{listener_, POLLIN, 0}};
    for (const State::Client& c : s.clients) fds.push_back({c.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), 100) <= 0) continue;
    for (size_t i = fds.size(); i-- > 1;) {
      if (!fds[i].revents) continue;
      State::Client& c = s.clients[i - 1];
      if (answer(c)) continue;
      ::close(c.fd);
      if (c.rank >= 0) {
        std::lock_guard lock(s.mutex);
        s.gone.insert(c.rank);
      }
      s.clients.erase(s.clients.begin() + static_cast<std::ptrdiff_t>(i - 1));
    }
    if (fds[0].revents & POLLIN) {
      const int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) continue;
      set_timeouts(fd, 10);
      s.clients.push_back({fd, -1, local_address_of(fd)});
    }
  }
}

namespace {

// A connection to host:port within `seconds` (a connect that hears nothing is given up, not left
// to the kernel's two minutes), or -1 with `why` set.
int connect_within(const addrinfo& a, double seconds, std::string& why) {
  const int fd = ::socket(a.ai_family, a.ai_socktype | SOCK_NONBLOCK, a.ai_protocol);
  if (fd < 0) {
    why = std::strerror(errno);
    return -1;
  }
  int error = ::connect(fd, a.ai_addr, a.ai_addrlen) == 0 ? 0 : errno;
  if (error == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    socklen_t n = sizeof error;
    if (poll_through_signals(&p, 1, static_cast<int>(seconds * 1000)) != 1 ||
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &n) != 0)
      error = ETIMEDOUT;
  }
  if (error != 0) {
    why = std::strerror(error);
    ::close(fd);
    return -1;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

}  // namespace

TcpStoreClient::TcpStoreClient(const std::string& host, int port, int rank, int ranks, double timeout_seconds)
    : where_(fmt::format("{}:{}", host, port)) {
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration<double>(timeout_seconds);
  std::string last = "no answer";
  bool said = false;
  // Until rank 0 listens (it may start later; its name may not resolve yet either).
  while (fd_ < 0) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const std::string service = std::to_string(port);
    if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
      last = fmt::format("MASTER_ADDR={} does not resolve: {}", host, ::gai_strerror(rc));
      found = nullptr;
    }
    for (addrinfo* a = found; a && fd_ < 0; a = a->ai_next) fd_ = connect_within(*a, 1.0, last);
    if (found) ::freeaddrinfo(found);
    if (fd_ >= 0) break;
    if (Clock::now() > deadline)
      throw RankError(fmt::format("rank {} could not reach rank 0's rendezvous at {} within {:g} s ({}): rank 0 must "
                                  "run on MASTER_ADDR (set it to rank 0's host name or address), and MASTER_PORT be "
                                  "open between the machines",
                                  rank, where_, timeout_seconds, last));
    // (as rank 0 says whom it waits for: a rank started first is not silent for minutes)
    if (!said && Clock::now() - start > std::chrono::seconds(2)) {
      std::fprintf(stderr, "bertc: rank %d of %d waits for rank 0 at %s (up to %g s): %s\n", rank, ranks,
                   where_.c_str(), timeout_seconds, last.c_str());
      said = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const int on = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  set_timeouts(fd_, 30);
  const int32_t who[2] = {rank, ranks};
  std::vector<char> value(sizeof who);
  std::memcpy(value.data(), who, sizeof who);
  std::pair<char, std::vector<char>> answer;
  try {
    answer = request('H', kGreeting, value, 30);
  } catch (const RankError&) {
    throw RankError(fmt::format("rank {}: what listens at {} is not rank 0's rendezvous (it did not answer bertc's "
                                "greeting): choose another MASTER_PORT",
                                rank, where_));
  }
  if (answer.first != 'k') {
    ::close(fd_);
    fd_ = -1;
    throw RankError(fmt::format("rank 0 refused rank {}: {}", rank, std::string(answer.second.begin(), answer.second.end())));
  }
}

TcpStoreClient::~TcpStoreClient() {
  if (fd_ >= 0) ::close(fd_);
}

std::pair<char, std::vector<char>> TcpStoreClient::request(char op, const std::string& key,
                                                           const std::vector<char>& value, double answer_seconds) {
  std::lock_guard lock(mutex_);
  // A request that fails leaves the connection in an unknown place of the protocol: it is closed,
  // and every later request fails at once.
  auto broken = [&] {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    return RankError(fmt::format("rank 0's rendezvous at {} stopped answering (rank 0 ended, hangs or is stopped)",
                                 where_));
  };
  if (fd_ < 0 || !send_message(fd_, op, key, value)) throw broken();
  pollfd p{fd_, POLLIN, 0};
  if (poll_through_signals(&p, 1, static_cast<int>(answer_seconds * 1000)) != 1) throw broken();
  char status = 0;
  uint64_t n = 0;
  if (!read_all(fd_, &status, 1) || !read_all(fd_, &n, 8) || n > kMaxValue) throw broken();
  std::vector<char> bytes(n);
  if (!read_all(fd_, bytes.data(), n)) throw broken();
  return {status, std::move(bytes)};
}

void TcpStoreClient::set(const std::string& key, const std::vector<char>& value) { request('S', key, value, 30); }

std::optional<std::vector<char>> TcpStoreClient::try_get(const std::string& key) {
  auto [status, value] = request('G', key, {}, 30);
  if (status == 'n') return std::nullopt;  // not set yet
  return std::move(value);
}

std::vector<char> TcpStoreClient::get(const std::string& key, double timeout_seconds) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_seconds);
  for (;;) {
    if (auto value = try_get(key)) return *value;
    if (Clock::now() > deadline)
      throw RankError(fmt::format("'{}' was not set at the rendezvous {} within {:g} s: a rank did not start, or "
                                  "died starting (see its output)",
                                  key, where_, timeout_seconds));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void TcpStoreClient::ping() {
  try {
    request('P', "", {}, 10);  // (rank 0's server answers in microseconds when it runs at all)
  } catch (const RankError&) {  // the caller finds out from server_gone()
  }
}

bool TcpStoreClient::server_gone() {
  std::lock_guard lock(mutex_);
  if (fd_ < 0) return true;
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  char byte;
  return ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) <= 0;
}

std::string TcpStoreClient::local_address() {
  std::lock_guard lock(mutex_);
  return fd_ < 0 ? "" : local_address_of(fd_);
}

}  // namespace bertc::distributed
