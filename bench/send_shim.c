// A preloaded shim for bench/slow_link.py: delays and rate-limits a process's TCP sends to
// 127.0.0.1 (never any other traffic: files, pipes, other hosts) where the kernel's traffic
// control cannot: latency where the kernel has no netem qdisc, a rate where it has no tc at all.
// Nothing in bertc is throttled; the harness preloads this into the ranks it starts.
//
//   BERTC_SHIM_DELAY_US  a message's latency: each send call waits this long first (the sender
//                        waits where a link would only delay the arrival; a message the kernel
//                        takes in several calls pays it for each)
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

// Before a shaped send: its latency.
static void before(void) {
  if (delay_seconds > 0) sleep_until(now() + delay_seconds);
}

// After it: the time its `sent` bytes take at the rate (sends queue behind each other).
static void after(ssize_t sent) {
  if (rate_bytes > 0 && sent > 0) {
    pthread_mutex_lock(&link_lock);
    const double start = link_free > now() ? link_free : now();
    link_free = start + (double)sent / rate_bytes;
    const double until = link_free;
    pthread_mutex_unlock(&link_lock);
    sleep_until(until);
  }
}

#define REAL(name, type) ((type)dlsym(RTLD_NEXT, name))

ssize_t send(int fd, const void* data, size_t n, int flags) {
  const int shape = shaped(fd);
  if (shape) before();
  const ssize_t sent = REAL("send", ssize_t(*)(int, const void*, size_t, int))(fd, data, n, flags);
  if (shape) after(sent);
  return sent;
}

ssize_t sendto(int fd, const void* data, size_t n, int flags, const struct sockaddr* to, socklen_t length) {
  const int shape = shaped(fd);
  if (shape) before();
  const ssize_t sent = REAL("sendto", ssize_t(*)(int, const void*, size_t, int, const struct sockaddr*, socklen_t))(
      fd, data, n, flags, to, length);
  if (shape) after(sent);
  return sent;
}

ssize_t sendmsg(int fd, const struct msghdr* message, int flags) {
  const int shape = shaped(fd);
  if (shape) before();
  const ssize_t sent = REAL("sendmsg", ssize_t(*)(int, const struct msghdr*, int))(fd, message, flags);
  if (shape) after(sent);
  return sent;
}

ssize_t write(int fd, const void* data, size_t n) {
  const int shape = shaped(fd);
  if (shape) before();
  const ssize_t sent = REAL("write", ssize_t(*)(int, const void*, size_t))(fd, data, n);
  if (shape) after(sent);
  return sent;
}

ssize_t writev(int fd, const struct iovec* parts, int count) {
  const int shape = shaped(fd);
  if (shape) before();
  const ssize_t sent = REAL("writev", ssize_t(*)(int, const struct iovec*, int))(fd, parts, count);
  if (shape) after(sent);
  return sent;
}
