// Running a command as one of several ranks (see ranks.h).
#include "driver/ranks.h"

#include <fmt/format.h>

namespace bertc::driver {

int run_as_rank(distributed::Communicator& world, const std::function<int()>& body,
                const std::function<std::string(const std::exception&)>& advice) {
  if (world.size() == 1) return body();
  try {
    return body();
  } catch (const std::exception& e) {
    std::cerr << fmt::format("bertc: rank {} of {}: error: {}{}\n", world.rank(), world.size(), e.what(), advice(e))
              << std::flush;
    world.abort(1);
  }
  return 1;  // not reached: abort() stops the process
}

}  // namespace bertc::driver
