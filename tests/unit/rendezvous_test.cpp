// distributed/tcp_store and distributed/gloo_communicator: the rendezvous of ranks that torchrun starts, and the
// collectives over Gloo, with two ranks as two threads of this process on the loopback. (What a
// dead or hung rank does to the others is tests/distributed/dp_test.py's, with processes.)
#include <chrono>
#include <cstring>
#include <future>
#include <thread>

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "distributed/gloo_communicator.h"
#include "distributed/tcp_store.h"
#include "ir/float16.h"
#include "refusal.h"

namespace bertc::distributed {
namespace {

std::vector<char> bytes(const std::string& s) { return {s.begin(), s.end()}; }

// A port nothing listens on now (the kernel's choice for a socket bound and closed again).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t n = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  ::close(fd);
  return ntohs(a.sin_port);
}

std::string refusal(const std::function<void()>& f) { return testing::refusal<RankError>(f); }

TEST(TcpStore, SetsGetsAndWaitsForKeys) {
  TcpStoreServer server(0, 2);
  TcpStoreClient zero("127.0.0.1", server.port(), 0, 2, 5), one("localhost", server.port(), 1, 2, 5);
  EXPECT_FALSE(one.try_get("a").has_value());
  // Where the ranks reach rank 0's machine, and it them: the loopback here.
  EXPECT_EQ(zero.local_address(), "127.0.0.1");
  EXPECT_TRUE(is_loopback(one.local_address()));  // (localhost: 127.0.0.1 or ::1)
  EXPECT_TRUE(is_loopback(server.reached_at()));
  EXPECT_FALSE(is_loopback("10.1.2.3"));
  zero.set("a", bytes("first"));
  EXPECT_EQ(one.get("a", 1), bytes("first"));
  zero.set("a", bytes("second"));  // a later value replaces the earlier
  EXPECT_EQ(one.try_get("a"), bytes("second"));
  std::vector<char> big(3 << 20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7);
  one.set("big", big);
  EXPECT_EQ(zero.get("big", 1), big);
  // get() waits for a key that another rank sets later.
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    one.set("late", bytes("here"));
  });
  EXPECT_EQ(zero.get("late", 5), bytes("here"));
  later.join();
  EXPECT_NE(refusal([&] { zero.get("never", 0.2); }).find("'never' was not set"), std::string::npos);
}

TEST(TcpStore, RefusesAnotherWorldSizeOrATakenRank) {
  TcpStoreServer server(0, 2);
  TcpStoreClient one("127.0.0.1", server.port(), 1, 2, 5);
  EXPECT_NE(refusal([&] { TcpStoreClient("127.0.0.1", server.port(), 0, 3, 5); }).find("the same WORLD_SIZE"),
            std::string::npos);
  EXPECT_NE(refusal([&] { TcpStoreClient("127.0.0.1", server.port(), 1, 2, 5); }).find("rank 1 has joined already"),
            std::string::npos);
  EXPECT_NE(refusal([&] { TcpStoreClient("127.0.0.1", server.port(), 2, 2, 5); }).find("below WORLD_SIZE=2"),
            std::string::npos);
}

TEST(TcpStore, KnowsWhichRanksAreGoneOrSilent) {
  TcpStoreServer server(0, 3);
  TcpStoreClient zero("127.0.0.1", server.port(), 0, 3, 5);
  auto one = std::make_unique<TcpStoreClient>("127.0.0.1", server.port(), 1, 3, 5);
  TcpStoreClient two("127.0.0.1", server.port(), 2, 3, 5);
  EXPECT_TRUE(server.gone().empty());
  one.reset();  // rank 1's process ends
  for (int i = 0; i < 100 && server.gone().empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(server.gone(), std::vector<int>{1});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(server.silent(0.2), std::vector<int>{2});  // rank 1 is gone, not silent
  two.ping();
  EXPECT_TRUE(server.silent(0.2).empty());
  EXPECT_FALSE(two.server_gone());
}

TEST(TcpStore, NamesWhatIsWrongWithTheAddress) {
  const int port = free_port();
  EXPECT_NE(refusal([&] { TcpStoreClient("127.0.0.1", port, 1, 2, 0.3); }).find("could not reach rank 0's rendezvous"),
            std::string::npos);
  EXPECT_NE(refusal([&] { TcpStoreClient("no-such-host.invalid", port, 1, 2, 0.3); }).find("does not resolve"),
            std::string::npos);
  // The port taken: by a second rank 0 of the same world (two processes given RANK=0: said, and
  // the first rank 0 learns it), by another bertc run, or by another program.
  TcpStoreServer server(0, 2);
  EXPECT_FALSE(server.second_rank0());
  EXPECT_NE(refusal([&] { TcpStoreServer(server.port(), 2); }).find("two processes were started with RANK=0"),
            std::string::npos)
      << refusal([&] { TcpStoreServer(server.port(), 2); });
  EXPECT_TRUE(server.second_rank0());
  EXPECT_NE(refusal([&] { TcpStoreServer(server.port(), 3); }).find("another bertc run, of another world size"),
            std::string::npos);
  const int other = ::socket(AF_INET, SOCK_STREAM, 0);  // a program that is not bertc: listens, never answers
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  ASSERT_EQ(::bind(other, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(other, 4), 0);
  socklen_t length = sizeof a;
  ::getsockname(other, reinterpret_cast<sockaddr*>(&a), &length);
  EXPECT_NE(refusal([&] { TcpStoreServer(ntohs(a.sin_port), 2); }).find("another program holds it: choose a free port"),
            std::string::npos);
  ::close(other);
}

TEST(TcpStore, DropsAStrangerAndGoesOnServing) {
  TcpStoreServer server(0, 2);
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(server.port()));
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  const char junk[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";  // not a request of ours: dropped
  ASSERT_GT(::send(fd, junk, sizeof junk, MSG_NOSIGNAL), 0);
  char c;
  EXPECT_LE(::recv(fd, &c, 1, 0), 0);  // the server closed the connection (a reset: our junk unread)
  ::close(fd);
  TcpStoreClient zero("127.0.0.1", server.port(), 0, 2, 5);
  zero.set("k", bytes("v"));
  EXPECT_EQ(zero.try_get("k"), bytes("v"));
}

// Two ranks of a Gloo world, one per thread; `body(comm)` runs on each.
void two_ranks(const std::function<void(Communicator&)>& body) {
  if (gloo_library_version().empty()) GTEST_SKIP() << "bertc was built without Gloo (BERTC_GLOO off)";
  const int port = free_port();
  auto rank = [&](int r) {
    Launch l{r, 2, r, "test", false, "127.0.0.1", port};
    std::unique_ptr<Communicator> comm = gloo_world(l, 20);
    body(*comm);
  };
  auto other = std::async(std::launch::async, rank, 1);
  rank(0);
  other.get();
}

TEST(GlooWorld, SumsGathersBroadcastsAndMeets) {
  two_ranks([](Communicator& c) {
    EXPECT_EQ(c.size(), 2);
    EXPECT_EQ(c.engine(), "Gloo");
    std::vector<float> f = {1.f * (c.rank() + 1), 2, 0.5f};
    std::vector<double> d = {0.25 * c.rank()};
    std::vector<int64_t> i = {int64_t{1} << (40 + c.rank())};
    // Several sums in flight at once, waited for in another order than started.
    auto pf = c.start_sum(f.data(), f.size(), Element::F32);
    auto pd = c.start_sum(d.data(), d.size(), Element::F64);
    auto pi = c.start_sum(i.data(), i.size(), Element::I64);
    pi->wait();
    pd->wait();
    pf->wait();
    EXPECT_EQ(f, (std::vector<float>{3, 4, 1}));
    EXPECT_EQ(d[0], 0.25);
    EXPECT_EQ(i[0], (int64_t{1} << 40) + (int64_t{1} << 41));
    // fp16: 1 + 2^-11 lies halfway between 1 and the next fp16, 1 + 2^-10: rounded to even, 1.
    // A sum kept in fp32 and rounded once at the end would give the same here, so a second
    // element checks the rounding of each addition apart from the fp32 answer: 2048 + 1 = 2048
    // in fp16 (its spacing at 2048 is 2).
    std::vector<uint16_t> h = {ir::f16_bits(c.rank() == 0 ? 1.f : 0x1p-11f), ir::f16_bits(c.rank() == 0 ? 2048.f : 1.f)};
    c.sum(h.data(), h.size(), Element::F16);
    EXPECT_EQ(ir::from_f16_bits(h[0]), 1.f);
    EXPECT_EQ(ir::from_f16_bits(h[1]), 2048.f);
    std::vector<uint16_t> b = {ir::bf16_bits(1.5f + c.rank())};
    c.sum(b.data(), 1, Element::Bf16);
    EXPECT_EQ(ir::from_bf16_bits(b[0]), 4.f);
    EXPECT_EQ(c.all_gather(100 + static_cast<uint64_t>(c.rank()), "a test's exchange"), (std::vector<uint64_t>{100, 101}));
    std::vector<uint32_t> state(1 << 18, c.rank() == 0 ? 0xabcdef01u : 0u);  // 1 MiB of rank 0's
    c.broadcast(state.data(), state.size() * 4, 0);
    EXPECT_EQ(state.front(), 0xabcdef01u);
    EXPECT_EQ(state.back(), 0xabcdef01u);
    for (int step = 0; step < 3; ++step) c.meet("step " + std::to_string(step));
  });
}

TEST(GlooWorld, RankZeroNamesTheRanksThatNeverCame) {
  if (gloo_library_version().empty()) GTEST_SKIP() << "bertc was built without Gloo (BERTC_GLOO off)";
  const Launch alone{0, 3, 0, "test", false, "127.0.0.1", free_port()};
  const std::string why = refusal([&] { gloo_world(alone, 0.5); });
  EXPECT_NE(why.find("rank 1, rank 2 did not join rank 0"), std::string::npos) << why;
  EXPECT_NE(why.find("unset WORLD_SIZE (here 3)"), std::string::npos) << why;
}

}  // namespace
}  // namespace bertc::distributed
