// A preloaded shim for bench/slow_link.py: delays and rate-limits a process's TCP sends to
// 127.0.0.1 (never any other traffic: files, pipes, other hosts) where the kernel's traffic
// control cannot: latency where the kernel has no netem qdisc, a rate where it has no tc at all.
// Nothing in bertc is throttled; the harness preloads this into the ranks it starts.
//
//   BERTC_SHIM_DELAY_US  a message's latency: a send call that starts a message (the socket's
//                        last call took all it was given) waits this long first; one that goes
//                        on with a message the kernel took in part, or refused for now, does not.
//                        (The sender waits, where a link would only delay the arrival.)
//   BERTC_SHIM_RATE_BPS  bytes a second this process may send (0: unlimited): each send waits
//                        until the link would have carried the bytes sent before it
//
// Build: cc -shared -fPIC -O2 -o send_shim.so send_shim.c -ldl -lpthread
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static double delay_seconds, rate_bytes;
static pthread_mutex_t link_lock = PTHREAD_MUTEX_INITIALIZER;
static double link_free;              // when the shaped link has carried every byte given to it
enum { kMostFds = 65536 };
static char in_message[kMostFds];     // per socket: its last send left part of a message to send

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void sleep_until(double when) {
  struct timespec t = {(time_t)when, (long)((when - (double)(time_t)when) * 1e9)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR) {
  }
}

__attribute__((constructor)) static void read_settings(void) {
  const char* delay = getenv("BERTC_SHIM_DELAY_US");
  const char* rate = getenv("BERTC_SHIM_RATE_BPS");
  delay_seconds = delay ? atof(delay) * 1e-6 : 0;
  rate_bytes = rate ? atof(rate) : 0;
}

// Whether `fd` is a socket connected to 127.0.0.1 (IPv4: Gloo's and the harness's address).
static int shaped(int fd) {
  if (fd < 0 || (delay_seconds <= 0 && rate_bytes <= 0)) return 0;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return 0;
  struct sockaddr_in peer;
  socklen_t length = sizeof peer;
  if (getpeername(fd, (struct sockaddr*)&peer, &length) != 0 || peer.sin_family != AF_INET) return 0;
  return ntohl(peer.sin_addr.s_addr) == INADDR_LOOPBACK;
}

// Before a shaped send: a new message's latency.
static void before(int fd) {
  if (delay_seconds > 0 && !(fd < kMostFds && in_message[fd])) sleep_until(now() + delay_seconds);
}

// After it: the time its `sent` bytes take at the rate (sends queue behind each other).
static void after(int fd, ssize_t sent, size_t asked) {
  if (fd < kMostFds) in_message[fd] = sent < 0 ? (errno == EAGAIN || errno == EWOULDBLOCK) : (size_t)sent < asked;
  if (rate_bytes > 0 && sent > 0) {
    pthread_mutex_lock(&link_lock);
    const double start = link_free > now() ? link_free : now();
    link_free = start + (double)sent / rate_bytes;
    const double until = link_free;
    pthread_mutex_unlock(&link_lock);
    sleep_until(until);
  }
}

static size_t bytes_of(const struct iovec* parts, int count) {
  size_t n = 0;
  for (int i = 0; i < count; ++i) n += parts[i].iov_len;
  return n;
}

#define REAL(name, type) ((type)dlsym(RTLD_NEXT, name))

ssize_t send(int fd, const void* data, size_t n, int flags) {
  const int shape = shaped(fd);
  if (shape) before(fd);
  const ssize_t sent = REAL("send", ssize_t(*)(int, const void*, size_t, int))(fd, data, n, flags);
  if (shape) after(fd, sent, n);
  return sent;
}

ssize_t sendto(int fd, const void* data, size_t n, int flags, const struct sockaddr* to, socklen_t length) {
  const int shape = shaped(fd);
  if (shape) before(fd);
  const ssize_t sent = REAL("sendto", ssize_t(*)(int, const void*, size_t, int, const struct sockaddr*, socklen_t))(
      fd, data, n, flags, to, length);
  if (shape) after(fd, sent, n);
  return sent;
}

ssize_t sendmsg(int fd, const struct msghdr* message, int flags) {
  const int shape = shaped(fd);
  if (shape) before(fd);
  const ssize_t sent = REAL("sendmsg", ssize_t(*)(int, const struct msghdr*, int))(fd, message, flags);
  if (shape) after(fd, sent, bytes_of(message->msg_iov, (int)message->msg_iovlen));
  return sent;
}

ssize_t write(int fd, const void* data, size_t n) {
  const int shape = shaped(fd);
  if (shape) before(fd);
  const ssize_t sent = REAL("write", ssize_t(*)(int, const void*, size_t))(fd, data, n);
  if (shape) after(fd, sent, n);
  return sent;
}

ssize_t writev(int fd, const struct iovec* parts, int count) {
  const int shape = shaped(fd);
  if (shape) before(fd);
  const ssize_t sent = REAL("writev", ssize_t(*)(int, const struct iovec*, int))(fd, parts, count);
  if (shape) after(fd, sent, bytes_of(parts, count));
  return sent;
}
