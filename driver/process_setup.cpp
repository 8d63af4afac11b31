// A bertc process's setup (see process_setup.h).
#include "driver/process_setup.h"

#include <csignal>

#include "reference/blas.h"
#include "run_folder/stop_request.h"

namespace bertc::driver {

void block_stop_signals() { run_folder::block_stop_signals(); }

void set_up_process(char** argv) {
  reference::one_blas_thread_under_address_limit(argv);
  run_folder::take_stop_signals();
  std::signal(SIGXFSZ, SIG_IGN);
}

}  // namespace bertc::driver
