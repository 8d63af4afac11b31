// Abrupt exits that still empty their registered files (see abrupt_exit.h).
#include "support/abrupt_exit.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>

namespace bertc::support {
namespace {

std::atomic<int> registered_fds[8] = {-1, -1, -1, -1, -1, -1, -1, -1};

}  // namespace

void empty_on_abrupt_exit(int fd) {
  for (auto& slot : registered_fds) {
    int free = -1;
    if (slot.compare_exchange_strong(free, fd)) return;
  }
}

void forget_on_abrupt_exit(int fd) {
  for (auto& slot : registered_fds) {
    int mine = fd;
    slot.compare_exchange_strong(mine, -1);
  }
}

void empty_registered_files() {
  for (auto& slot : registered_fds)
    if (const int fd = slot.load(); fd >= 0) (void)::ftruncate(fd, 0);
}

void abrupt_exit(int code) {
  empty_registered_files();
  std::_Exit(code);
}

}  // namespace bertc::support
